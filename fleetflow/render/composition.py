"""Config composition: merge the ConfigMaps that apply to an assignment, keeping provenance (DESIGN §3).

Pure: takes loaded :class:`ConfigSource` values and returns plain data. Built for fleets of 100,000
assignments:

* A ConfigMap's labels are a set of *requirements* ``(key, value)``; an assignment offers a set of *facts*
  (its cluster type, environment, target and workload, plus the non-reserved labels of its cluster type and
  of its target). A ConfigMap applies exactly when its requirements are a subset of the facts. Every
  ConfigMap is indexed under its most selective requirement, so :meth:`Composer.compose` only looks at the
  few ConfigMaps that could apply, never at all of them.
* String values that hold a YAML map or list are parsed once per ConfigMap, when the composer is built.
* Merged results are cached by the tuple of applied ConfigMaps (and every prefix of it), so an identical set
  is merged once and its :class:`Composed` shared. Provenance and the fingerprint are computed on first use.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from ruamel.yaml import YAML

from fleetflow.errors import InputError, Location, Problem
from fleetflow.model.controlplane import PLATFORM_CONFIG_LABEL
from fleetflow.model.documents import to_plain, unwalkable
from fleetflow.model.yaml_keys import DuplicateKey, KeyProblem, value_yaml, where_in
from fleetflow.render.canonical import canonical_json

CLUSTER_TYPE = "cluster-type"
DEPLOYMENT_TARGET = "deployment-target"
WORKLOAD = "workload"
ENVIRONMENT = "environment"
RESERVED_LABELS = frozenset({CLUSTER_TYPE, DEPLOYMENT_TARGET, WORKLOAD, ENVIRONMENT})
# Preference for the index key of a ConfigMap: the most selective label kinds first.
_ANCHOR_RANK = {CLUSTER_TYPE: 0, DEPLOYMENT_TARGET: 1, WORKLOAD: 2}

Path = tuple[str, ...]
Fact = tuple[str, str]


@dataclass(frozen=True)
class ConfigSource:
    """One ``platform-config`` ConfigMap, as loaded. ``data`` is plain data (as documents give it: str, int,
    float, bool, None, lists, maps with string keys); a string value may hold YAML, parsed when composing."""

    name: str
    location: Location
    labels: Mapping[str, str]
    priority: int
    data: Mapping[str, Any]
    key_locations: Mapping[tuple[str, ...], Location] = field(default_factory=dict)


@dataclass(frozen=True)
class Subject:
    """The assignment (deployment target on a cluster type) being composed."""

    environment: str
    cluster_type: str
    cluster_type_labels: Mapping[str, str]
    deployment_target: str
    target_labels: Mapping[str, str]
    workload: str


@dataclass(frozen=True)
class Contribution:
    """The value one ConfigMap gives to one key path, and where it is written."""

    source: str
    location: Location
    value: Any


@dataclass(frozen=True)
class Provenance:
    path: tuple[str, ...]
    winner: Contribution
    overridden: tuple[Contribution, ...]  # lower-precedence values it replaced, highest first


def _label_facts(labels: Mapping[str, str]) -> set[Fact]:
    return {(key, str(value)) for key, value in labels.items() if key not in RESERVED_LABELS}


def _cluster_facts(subject: Subject) -> frozenset[Fact]:
    """What the cluster type side of a subject offers (plus its environment)."""
    facts = _label_facts(subject.cluster_type_labels)
    facts.add((CLUSTER_TYPE, subject.cluster_type))
    facts.add((ENVIRONMENT, subject.environment))
    return frozenset(facts)


def _target_facts(subject: Subject) -> frozenset[Fact]:
    """What the deployment target side of a subject offers."""
    facts = _label_facts(subject.target_labels)
    facts.add((DEPLOYMENT_TARGET, subject.deployment_target))
    facts.add((WORKLOAD, subject.workload))
    return frozenset(facts)


def _requirements(labels: Mapping[str, str]) -> frozenset[Fact]:
    return frozenset((k, str(v)) for k, v in labels.items() if k != PLATFORM_CONFIG_LABEL)


def applies(labels: Mapping[str, str], subject: Subject) -> bool:
    """Whether a ConfigMap (or ConfigSchema) with ``labels`` applies to ``subject`` (DESIGN §3).

    ``cluster-type``, ``deployment-target``, ``workload`` and ``environment`` match the subject itself; any
    other ``k: v`` matches when the cluster type or the deployment target carries it. No label: applies.
    """
    for key, value in labels.items():
        wanted = str(value)
        if key == PLATFORM_CONFIG_LABEL:
            continue
        if key == CLUSTER_TYPE:
            ok = subject.cluster_type == wanted
        elif key == DEPLOYMENT_TARGET:
            ok = subject.deployment_target == wanted
        elif key == WORKLOAD:
            ok = subject.workload == wanted
        elif key == ENVIRONMENT:
            ok = subject.environment == wanted
        else:
            ok = any(
                (found := carrier.get(key)) is not None and str(found) == wanted
                for carrier in (subject.cluster_type_labels, subject.target_labels)
            )
        if not ok:
            return False
    return True


# --- YAML held in a value ---------------------------------------------------------------------------------


_COLLECTION_START = frozenset("[{-!?&*|>#%")
# a block mapping's key indicator: ":" followed by a space, a tab, a line break (ruamel.yaml's scanner counts
# "\x85", "\u2028" and "\u2029" as line breaks too) or the end of the text. "https://api.example.com" or "10:30"
# holds none: a plain scalar, a string whatever the parser says.
_KEY_INDICATOR = re.compile(":(?:[ \t\r\n\x85\u2028\u2029]|$)")


def _may_be_collection(text: str) -> bool:
    """Cheap pre-check: only strings that could be a YAML map or list are handed to the parser. A map or a list
    starts with one of ``_COLLECTION_START`` (a flow collection, a block sequence, a tag, an anchor, a comment,
    a directive) or holds a key indicator; a byte-order mark in front hides the first character, so such a
    string with a ":" anywhere is parsed. Before 2026-11-28 every string with a ":" was parsed, and a URL or a
    "host:port" value cost about 70 us of pure-Python parsing to stay the string it was (11 of the 123 values
    the benchmark fleet parsed; a fleet of endpoints has thousands). ``tests/test_composition.py`` holds what is
    skipped to what the parser would leave a string."""
    stripped = text.lstrip()
    if not stripped:
        return False
    if stripped[0] in _COLLECTION_START:
        return True
    return ":" in stripped and (_KEY_INDICATOR.search(stripped) is not None or "\ufeff" in stripped)


def _parse_value(yaml: YAML, text: str) -> Any:
    """A string holding a YAML map or list becomes that map or list, its keys and values as a document's are
    (``yaml`` is :func:`~fleetflow.model.yaml_keys.value_yaml`: ``1.0:`` is the key ``"1"``, ``true:``
    ``"true"``); anything else stays the string. A key Kubernetes refuses (null, an integer outside int64, a list,
    bytes that are not text) is :class:`KeyProblem`: that text is YAML, read otherwise by every tool. A duplicate
    key leaves the text as it is, as any text the parser refuses."""
    if not _may_be_collection(text):
        return text
    try:
        parsed = yaml.load(text)
    except DuplicateKey:
        return text
    except KeyProblem:
        raise
    except Exception:  # user text, any parser error: then it is a plain string value (errors.py, rule 4)
        return text
    if isinstance(parsed, Mapping | list):
        # aliases that would build it out endless or huge, or nesting deeper than a document may: the text it is
        return text if unwalkable(parsed, text) else to_plain(parsed)
    return text


def _key_refused(source: ConfigSource, key: str, problem: KeyProblem) -> Problem:
    """A ConfigMap value whose YAML holds a key Kubernetes refuses, as the problem that fails the assignments the
    ConfigMap applies to: at the data key, naming the line of the value it stands on."""
    return Problem(
        f"ConfigMap {source.name}, data key {key} (a string holding YAML): {problem.message}"
        f"{where_in(problem.mark, 'the value')}",
        source.key_locations.get((key,), source.location), problem.hint)


def _merge(base: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge without touching either side: maps merge, anything else replaces. Untouched subtrees are
    shared with ``base``/``overlay`` (the results are treated as immutable)."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict):
            current = out.get(key)
            out[key] = _merge(current, value) if isinstance(current, dict) and current else value
        else:
            out[key] = value
    return out


_MISSING = object()


def _value_at(data: Mapping[str, Any], path: Sequence[Any]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _leaves(values: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, value in values.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value:
            yield from _leaves(value, path)
        else:
            yield path


# --- layers and composed results -------------------------------------------------------------------------


class _Layer:
    """A ConfigSource ready to merge: its rank in the precedence order, what it asks of a subject, and (worked out
    when first asked for) its parsed data and fingerprint. A schedule composes only the assignments a change
    touched, so the ConfigMaps none of them uses are never parsed nor hashed: at 100,000 assignments that is
    most of the 1,100 of the benchmark fleet, whose parsing grew with the fleet."""

    __slots__ = ("_data", "_fingerprint", "_refused", "_yaml", "rank", "requirements", "source")

    def __init__(self, rank: int, source: ConfigSource, requirements: frozenset[Fact], yaml: YAML) -> None:
        self.rank = rank
        self.source = source
        self.requirements = requirements
        self._yaml = yaml
        self._data: dict[str, Any] | None = None
        self._fingerprint: str | None = None
        self._refused: list[Problem] | None = None  # the keys Kubernetes refuses in its strings, once found

    @property
    def data(self) -> dict[str, Any]:
        """The source's data; strings that hold YAML are parsed (documents are plain data already).
        :class:`InputError` with one problem per data key whose string holds a key Kubernetes refuses (every one,
        found once: each assignment the ConfigMap applies to raises it again without parsing)."""
        if self._data is None:
            if self._refused is not None:
                raise InputError(self._refused)
            yaml = self._yaml
            data: dict[str, Any] = {}
            refused: list[Problem] = []
            for key, value in self.source.data.items():
                try:
                    data[key] = _parse_value(yaml, value) if isinstance(value, str) else value
                except KeyProblem as problem:
                    refused.append(_key_refused(self.source, key, problem))
            if refused:
                self._refused = refused
                raise InputError(refused)
            self._data = data
        return self._data

    @property
    def fingerprint(self) -> str:
        """sha256 of the layer's name, priority, labels and parsed data: equal fingerprints, equal layer."""
        if self._fingerprint is None:
            source = self.source
            self._fingerprint = hashlib.sha256(
                canonical_json([source.name, source.priority, dict(source.labels), self.data]).encode()
            ).hexdigest()
        return self._fingerprint

    def location_of(self, path: Path) -> Location:
        locations = self.source.key_locations
        for end in range(len(path), 0, -1):
            found = locations.get(path[:end])
            if found is not None:
                return found
        return self.source.location

    def contribution(self, path: Path, value: Any) -> Contribution:
        return Contribution(self.source.name, self.location_of(path), value)


class _LazyProvenance(Mapping[Path, Provenance]):
    """Provenance of every leaf path of a composed value, computed per path on first access."""

    def __init__(self, values: dict[str, Any], layers: tuple[_Layer, ...]) -> None:
        self._values = values
        self._layers = layers
        self._cache: dict[Path, Provenance] = {}
        self._paths: list[Path] | None = None

    def __getitem__(self, path: Path) -> Provenance:
        found = self._cache.get(path)
        if found is not None:
            return found
        path = tuple(path)
        value = _value_at(self._values, path)
        if not path or value is _MISSING or (isinstance(value, dict) and value):
            raise KeyError(path)
        contributions = [
            layer.contribution(path, here)
            for layer in reversed(self._layers)
            if (here := _value_at(layer.data, path)) is not _MISSING
        ]
        provenance = Provenance(path, contributions[0], tuple(contributions[1:]))
        self._cache[path] = provenance
        return provenance

    def _all_paths(self) -> list[Path]:
        if self._paths is None:
            self._paths = list(_leaves(self._values))
        return self._paths

    def __iter__(self) -> Iterator[Path]:
        return iter(self._all_paths())

    def __len__(self) -> int:
        return len(self._all_paths())

    def __contains__(self, path: object) -> bool:
        try:
            self[path]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True


@dataclass(frozen=True)
class Composed:
    """The merged config of one assignment. Shared between assignments with the same applied ConfigMaps;
    treat ``values`` as immutable. ``fingerprint`` is the sha256 of the canonical JSON of ``values``."""

    values: dict[str, Any]
    provenance: Mapping[tuple[str, ...], Provenance]  # every leaf path (scalar, list, empty map)
    sources: tuple[str, ...]  # applied ConfigMaps, lowest precedence first

    @cached_property
    def fingerprint(self) -> str:
        return hashlib.sha256(canonical_json(self.values).encode()).hexdigest()

    def locate(self, path: Sequence[str | int]) -> Provenance | None:
        """Provenance of ``path`` or of its longest leaf prefix (a list item points at its list). For a
        non-empty map, the first leaf below it."""
        keys: list[str] = []
        for part in path:
            if not isinstance(part, str):
                break
            keys.append(part)
        for end in range(len(keys), 0, -1):
            found = self.provenance.get(tuple(keys[:end]))
            if found is not None:
                return found
        if keys and len(keys) == len(path) and isinstance(_value_at(self.values, keys), dict):
            prefix = tuple(keys)
            below = sorted(p for p in self.provenance if p[: len(prefix)] == prefix)
            if below:
                return self.provenance[below[0]]
        return None


@dataclass(frozen=True)
class _ClusterPlan:
    """Per cluster type: the ConfigMaps its side alone satisfies, and those that also need target labels."""

    facts: frozenset[Fact]
    hits: tuple[int, ...]
    pending: tuple[tuple[int, frozenset[Fact]], ...]  # (rank, requirements the cluster type lacks)


@dataclass(frozen=True)
class _TargetPlan:
    """Per deployment target: the ConfigMaps indexed under one of its facts."""

    facts: frozenset[Fact]
    entries: tuple[tuple[Fact, int, frozenset[Fact]], ...]  # (index key, rank, requirements)
    # the same entries split once: those the target satisfies alone, and the rest with what the cluster must add
    settled: tuple[tuple[Fact, int], ...] = ()
    residual: tuple[tuple[Fact, int, frozenset[Fact]], ...] = ()


def precedence_key(source: ConfigSource) -> tuple[int, int, str, str, int]:
    """Lowest first: priority, then specificity (number of labels besides platform-config), then name."""
    return (
        source.priority,
        len(_requirements(source.labels)),
        source.name,
        source.location.file,
        source.location.line or 0,
    )


Plan = TypeVar("Plan")


class _PlanCache(Generic[Plan]):
    """Plans by name, (environment, cluster type) or (target, workload), not by a set of labels built per subject
    (that would dominate large fleets). Each entry keeps the labels it was planned for; a hit is checked by identity
    first (the engine passes the same dict for every subject of a cluster type), then by equality."""

    def __init__(self, plan: Callable[[str, str, Mapping[str, str]], Plan]) -> None:
        self._plan = plan
        self._entries: dict[tuple[str, str], tuple[Mapping[str, str], Plan]] = {}

    def get(self, first: str, second: str, labels: Mapping[str, str]) -> Plan:
        key = (first, second)
        entry = self._entries.get(key)
        if entry is None or (entry[0] is not labels and entry[0] != labels):
            entry = self._entries[key] = (labels, self._plan(first, second, labels))
        return entry[1]


class Composer:
    """Composes config for many subjects from one environment's ConfigMaps."""

    def __init__(self, sources: Sequence[ConfigSource]) -> None:
        yaml = value_yaml()  # keys as in a document; a date-time stays its text, as Kalypso (Go) keeps it
        ordered = sorted(sources, key=precedence_key)
        self._layers = tuple(
            _Layer(rank, source, _requirements(source.labels), yaml) for rank, source in enumerate(ordered)
        )
        counts = Counter(fact for layer in self._layers for fact in layer.requirements)
        self._always: list[int] = []
        self._index: dict[Fact, list[tuple[int, frozenset[Fact]]]] = {}
        for layer in self._layers:
            if not layer.requirements:
                self._always.append(layer.rank)
                continue
            anchor = min(layer.requirements, key=lambda f: (_ANCHOR_RANK.get(f[0], 3), counts[f], f))
            self._index.setdefault(anchor, []).append((layer.rank, layer.requirements))
        self._hits_text: dict[tuple[int, ...], str] = {}
        self._merged: dict[tuple[int, ...], dict[str, Any]] = {(): {}}
        self._composed: dict[tuple[int, ...], Composed] = {}
        self._cluster_plans = _PlanCache(self._plan_cluster)
        self._target_plans = _PlanCache(self._plan_target)

    @staticmethod
    def _extras(cluster: _ClusterPlan, target: _TargetPlan) -> list[int]:
        """Ranks that apply because of the target (beyond those the cluster type alone settles)."""
        if not cluster.pending and not target.entries:
            return []
        ours, theirs = cluster.facts, target.facts
        extra = [rank for rank, residual in cluster.pending if residual <= theirs]
        # an entry whose anchor the cluster type also offers was already found through the cluster plan
        extra.extend(rank for anchor, rank in target.settled if anchor not in ours)
        extra.extend(rank for anchor, rank, rest in target.residual if anchor not in ours and rest <= ours)
        return extra

    def applied(self, subject: Subject) -> tuple[int, ...]:
        """Ranks of the ConfigMaps that apply to ``subject``, lowest precedence first."""
        cluster = self._cluster_plans.get(subject.environment, subject.cluster_type, subject.cluster_type_labels)
        target = self._target_plans.get(subject.deployment_target, subject.workload, subject.target_labels)
        extra = self._extras(cluster, target)
        return tuple(sorted(cluster.hits + tuple(extra))) if extra else cluster.hits

    def sources_fingerprint(
        self, environment: str, cluster_type: str, clabels: Mapping[str, str],
        target: str, workload: str, tlabels: Mapping[str, str],
    ) -> str:
        """Identifies the ConfigMaps that apply to a subject and their content (names, priorities, labels, data):
        equal fingerprints, equal config, without merging anything. Incremental rendering hashes it for every
        assignment, so it takes the subject's parts, not a :class:`Subject`."""
        cluster = self._cluster_plans.get(environment, cluster_type, clabels)
        plan = self._target_plans.get(target, workload, tlabels)
        try:
            base = self._hits_text.get(cluster.hits)
            if base is None:
                base = self._hits_text[cluster.hits] = ":".join(
                    self._layers[rank].fingerprint for rank in cluster.hits)
            extra = self._extras(cluster, plan)
            if not extra:
                return base
            return base + "|" + ":".join(self._layers[rank].fingerprint for rank in sorted(extra))
        except InputError:  # a ConfigMap's data does not read: every one that applies and does not, each named
            raise self._refused((*cluster.hits, *self._extras(cluster, plan))) from None

    def _plan_cluster(self, environment: str, cluster_type: str, labels: Mapping[str, str]) -> _ClusterPlan:
        facts = cluster_side_facts(environment, cluster_type, labels)
        hits = list(self._always)
        pending: list[tuple[int, frozenset[Fact]]] = []
        for fact in facts:
            for rank, needs in self._index.get(fact, ()):
                if needs <= facts:
                    hits.append(rank)
                else:
                    pending.append((rank, needs - facts))
        return _ClusterPlan(facts, tuple(sorted(hits)), tuple(pending))

    def _plan_target(self, target: str, workload: str, labels: Mapping[str, str]) -> _TargetPlan:
        facts = target_side_facts(target, workload, labels)
        entries = tuple((fact, rank, needs) for fact in facts for rank, needs in self._index.get(fact, ()))
        settled = tuple((anchor, rank) for anchor, rank, needs in entries if needs <= facts)
        residual = tuple((anchor, rank, needs - facts) for anchor, rank, needs in entries if not needs <= facts)
        return _TargetPlan(facts, entries, settled, residual)

    def _refused(self, ranks: Iterable[int]) -> InputError:
        """The problems of every one of the ConfigMaps ``ranks`` whose data does not read (a string holding a key
        Kubernetes refuses), in precedence order: the error path, once one of them raised. Each bad ConfigMap
        that applies to an assignment is a problem of its own (until 2026-11-29 only the first was named)."""
        problems: list[Problem] = []
        for rank in sorted(set(ranks)):
            try:
                self._layers[rank].data  # noqa: B018 - read for the problems it raises
            except InputError as exc:
                problems.extend(exc.problems())
        return InputError(problems)

    def compose(self, subject: Subject) -> Composed:
        key = self.applied(subject)
        composed = self._composed.get(key)
        if composed is None:
            try:
                values = self._merge_prefix(key)
            except InputError:
                raise self._refused(key) from None
            layers = tuple(self._layers[rank] for rank in key)
            composed = Composed(
                values=values,
                provenance=_LazyProvenance(values, layers),
                sources=tuple(layer.source.name for layer in layers),
            )
            self._composed[key] = composed
        return composed

    def _merge_prefix(self, key: tuple[int, ...]) -> dict[str, Any]:
        end = len(key)
        while key[:end] not in self._merged:
            end -= 1
        values = self._merged[key[:end]]
        for stop in range(end + 1, len(key) + 1):
            values = _merge(values, self._layers[key[stop - 1]].data)
            self._merged[key[:stop]] = values
        return values


def requirement_facts(labels: Mapping[str, str]) -> frozenset[Fact]:
    """What a ConfigMap with ``labels`` asks of a subject (``applies`` ⇔ these ⊆ cluster side ∪ target side)."""
    return _requirements(labels)


def cluster_side_facts(environment: str, cluster_type: str, labels: Mapping[str, str]) -> frozenset[Fact]:
    return _cluster_facts(Subject(environment, cluster_type, labels, "", {}, ""))


def target_side_facts(target: str, workload: str, labels: Mapping[str, str]) -> frozenset[Fact]:
    return _target_facts(Subject("", "", {}, target, labels, workload))


def _wanted_on_side(wanted: frozenset[Fact], own: Mapping[str, str], labels: Mapping[str, str]) -> frozenset[Fact]:
    """The facts of ``wanted`` that a side offers, without making the side's facts: a reserved key is offered only
    as the side's ``own`` value of it (:func:`_cluster_facts`, :func:`_target_facts`), any other by its labels."""
    return frozenset(
        (k, v) for k, v in wanted
        if (own.get(k) == v if k in RESERVED_LABELS else k in labels and str(labels[k]) == v)
    )


def cluster_side_wanted(wanted: frozenset[Fact], environment: str, cluster_type: str,
                        labels: Mapping[str, str]) -> frozenset[Fact]:
    """``wanted & cluster_side_facts(environment, cluster_type, labels)``, a lookup per wanted fact."""
    return _wanted_on_side(wanted, {CLUSTER_TYPE: cluster_type, ENVIRONMENT: environment}, labels)


def target_side_wanted(wanted: frozenset[Fact], target: str, workload: str,
                       labels: Mapping[str, str]) -> frozenset[Fact]:
    """``wanted & target_side_facts(target, workload, labels)``, a lookup per wanted fact."""
    return _wanted_on_side(wanted, {DEPLOYMENT_TARGET: target, WORKLOAD: workload}, labels)

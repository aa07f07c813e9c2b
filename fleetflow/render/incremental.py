"""Everything incremental rendering needs, in one place: the state files and what a change touches.

**The state** is kept in small files under the environment's output root, so that no file grows with the fleet
and a run reads and rewrites only what it touches:

- ``.fleetflow/state.json``, **the index**: the environment, the ``main`` and environment-branch commits, the
  schemas' fingerprint, the held-back assignments, and the digest of each of its parts.
- ``.fleetflow/index/<part>.json``, **the index's parts**: the clusters expected to report a rollout (with the
  commits, all the gate reads), the key hashes of every config container (to report which config keys changed),
  the fingerprints below, and one line per cluster type that has assignments: how many, and a digest of their ids.
  Each name (cluster type, ConfigMap, deployment target) is in the part of two hex digits of its ``sha256``, or,
  for an index of 64 names or fewer, in the one part ``all``: a change rewrites the parts of what it changed, not
  an index that grows with the fleet. Every part is read with the index (one batch).
- ``.fleetflow/state/<clusterType>.json``, **one shard per cluster-type folder**: one line per assignment of that
  cluster type (input hash, content hash, files). A shard is read only when its cluster type is touched.

All are written one entry per line, sorted, so git diffs of them stay small and readable, and the same state
always gives the same bytes. A state written before shards existed (``version: 1``, every assignment in
``state.json``) and a whole index written before it had parts (``version: 2``) are still read; the next write
converts them.

**What a change touches** is found from a few fingerprints instead of one hash per assignment.

The previous state records a fingerprint per cluster type, per deployment target and per ConfigMap (with its
labels), and one for all ConfigSchemas. An assignment must be rendered again only when its cluster type or its
target changed, when a changed (added, removed) ConfigMap applies to it now or applied to it before, when it is
new, or when it was held back last time. Everything else keeps its previous state entry and files: on a large
fleet a one-value change then costs work in proportion to what it touches, not to the fleet. A cluster type none
of whose assignments is touched, and whose assignments are the same ids as before (the index's digest), keeps its
shard unread. A cluster type's status reporter has a fingerprint of its own (template, cluster type, clusters,
GitOps repo): its ``_status/`` folder is rendered again only when that changes.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fleetflow import __version__
from fleetflow.collector import kept, paused
from fleetflow.errors import Location, Problem
from fleetflow.render.composition import Fact, cluster_side_wanted, requirement_facts, target_side_wanted
from fleetflow.render.scheduling import Target

STATE_PATH = ".fleetflow/state.json"  # the index, relative to an environment's output root
SHARD_DIR = ".fleetflow/state"  # one shard per cluster type, relative to an environment's output root
PART_DIR = ".fleetflow/index"  # the index's parts, relative to an environment's output root
STATUS_DIR = "_status"  # inside a cluster-type folder; assignment folders never start with "_"
STATE_VERSION = 3
WHOLE_INDEX_VERSION = 2  # the whole index in state.json, no parts: still read, converted by the next write
LEGACY_VERSION = 1  # every assignment in state.json: still read, converted by the next write
SHARD_VERSION = 2  # of the shard files (unchanged by version 3, which split the index only)
PART_KIND = "RenderStateIndexPart"


def state_path(output_path: str) -> str:
    """Where ``state.json`` stands in a GitOps repo whose environment output is at ``output_path``
    (``GitOpsRepo.spec.path``: ``.``, ``""``, ``/``, ``./apps/`` and ``apps`` are all understood)."""
    folder = posixpath.normpath(output_path.strip("/") or ".")
    return STATE_PATH if folder == "." else f"{folder}/{STATE_PATH}"


def is_state_file(path: str) -> bool:
    """Whether ``path`` (relative to the output root) is the state index, one of its parts or one of its shards."""
    return path == STATE_PATH or path.startswith((f"{SHARD_DIR}/", f"{PART_DIR}/"))


SMALL_INDEX = 64  # names (cluster types, ConfigMaps, deployment targets) up to which the index has one part
WHOLE_PART = "all"  # that part


def index_part(name: str, *, whole: bool = False) -> str:
    """The part of the index that holds what it records of ``name`` (a cluster type, a ConfigMap or a deployment
    target): two hex digits of ``sha256(name)``, so 256 parts at most and each name always in the same one; or,
    for an index of :data:`SMALL_INDEX` names or fewer (``whole``), the one part ``all``."""
    return WHOLE_PART if whole else hashlib.sha256(name.encode()).hexdigest()[:2]


def part_path(part: str) -> str:
    """The file of the index's part ``part``, relative to the output root."""
    return f"{PART_DIR}/{part}.json"


def is_part_file(path: str) -> bool:
    """Whether ``path`` (relative to the output root) is named as fleetflow names the index's parts: ``all.json``
    or two lowercase hex digits and ``.json`` in :data:`PART_DIR`."""
    folder, _, name = path.rpartition("/")
    stem = name.removesuffix(".json")
    return folder == PART_DIR and name.endswith(".json") and (
        stem == WHOLE_PART or (len(stem) == 2 and all(c in "0123456789abcdef" for c in stem)))


class NewerState(ValueError):
    """A state index of a version later than this fleetflow writes: a newer fleetflow wrote it. Not a state that
    does not read (rendered again and overwritten): that would write this version's state over the newer one's, and
    each run of the two versions would then render everything again. The commands refuse it (exit 1) and say to
    upgrade (until 2026-11-28 it was overwritten without a word)."""

    def __init__(self, version: int, engine: str) -> None:
        self.version, self.engine = version, engine
        super().__init__(f"state version {version} was written by a newer fleetflow ({engine or 'its engine not named'}"
                         f"); this one (fleetflow {__version__}) reads versions up to {STATE_VERSION}")

    def problem(self, where: str) -> Problem:
        return Problem(str(self), Location(where),
                       "upgrade fleetflow to the version that wrote it (in the workflows: the fleetflow actions' ref; "
                       "locally: pip install -U fleetflow); nothing was written")


FileReader = Callable[[list[str]], Mapping[str, bytes | None]]  # paths relative to the output root -> bytes


def shard_path(cluster_type: str) -> str:
    """The shard of ``cluster_type``, relative to the output root."""
    return f"{SHARD_DIR}/{cluster_type}.json"


class AssignmentState(NamedTuple):
    """One assignment's line in a shard (a NamedTuple: 100,000 of them may be read in one render)."""

    input_hash: str
    content_hash: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class ExpectedCluster:
    name: str
    cluster_type: str
    status_context: str | None


@dataclass
class Fingerprints:
    """What incremental rendering compares to find the assignments a change can touch (``affected_assignments``)."""

    schemas: str = ""
    cluster_types: dict[str, str] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    config_maps: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # name -> (fp, labels)
    held_back: list[str] = field(default_factory=list)
    # cluster type -> the fingerprint of its status reporter's inputs (none: it has no reporter); None: the state
    # was written before reporters had fingerprints, so every ``_status/`` folder is looked at again
    reporters: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schemas": self.schemas,
            "clusterTypes": dict(sorted(self.cluster_types.items())),
            "targets": dict(sorted(self.targets.items())),
            "configMaps": {
                k: [fp, dict(sorted(labels.items()))] for k, (fp, labels) in sorted(self.config_maps.items())
            },
            "heldBack": sorted(self.held_back),
            "reporters": dict(sorted((self.reporters or {}).items())),
        }

    @classmethod
    def from_json(cls, raw: Any) -> Fingerprints | None:
        if not isinstance(raw, dict):
            return None
        try:
            return cls(
                schemas=str(raw["schemas"]),
                cluster_types={str(k): str(v) for k, v in raw["clusterTypes"].items()},
                targets={str(k): str(v) for k, v in raw["targets"].items()},
                config_maps={str(k): (str(v[0]), {str(a): str(b) for a, b in v[1].items()})
                             for k, v in raw["configMaps"].items()},
                held_back=[str(a) for a in raw.get("heldBack", [])],
                reporters=({str(k): str(v) for k, v in raw["reporters"].items()}
                           if isinstance(raw.get("reporters"), dict) else None),
            )
        except (KeyError, TypeError, IndexError, AttributeError):
            return None


def members_digest(assignment_ids: Iterable[str]) -> str:
    """The digest of a cluster type's assignment ids (order does not matter): equal digests, same assignments."""
    return members_digest_sorted("\n".join(sorted(assignment_ids)))


def members_digest_sorted(joined: str) -> str:
    """:func:`members_digest` of ids already sorted and joined by newlines."""
    return hashlib.sha256(joined.encode()).hexdigest()[:32]


ShardReader = Callable[[list[str]], Mapping[str, bytes | None]]  # cluster types -> their shard's bytes


class Shard:
    """The assignments of one cluster type. A shard named by an index is read on first use (``entries``); until
    then it knows only its size and the digest of its ids. ``stored``: a file holds it (``data``, once read);
    a shard made by a render, or read from a version-1 state, is not stored yet."""

    __slots__ = ("_count", "_entries", "_members", "_read", "cluster_type", "data", "lines", "stored", "unreadable")

    def __init__(self, cluster_type: str, entries: dict[str, AssignmentState] | None = None, *, count: int = 0,
                 members: str = "", read: ShardReader | None = None, stored: bool = False,
                 lines: dict[str, tuple[AssignmentState, str]] | None = None) -> None:
        self.cluster_type = cluster_type
        self._entries = entries
        self._count = count
        self._members = members if entries is None else ""
        self._read = read
        self.data: bytes | None = None
        self.stored = stored
        self.unreadable: str | None = None  # why the stored shard could not be read (its entries are then empty)
        # lines of the file this shard was read from, by assignment: an entry kept unchanged is written back as the
        # same text instead of being formatted again
        self.lines: dict[str, tuple[AssignmentState, str]] = lines if lines is not None else {}

    @property
    def loaded(self) -> bool:
        return self._entries is not None

    @property
    def entries(self) -> dict[str, AssignmentState]:
        if self._entries is None:
            if self._read is None:
                raise ValueError(f"the state shard {shard_path(self.cluster_type)} was not read (index only)")
            self.take(self._read([self.cluster_type]).get(self.cluster_type))
        assert self._entries is not None
        return self._entries

    def take(self, data: bytes | None) -> None:
        """Fill the shard from its file's bytes (None: the file is missing)."""
        self.data = data
        self._entries = {}
        self._members = ""  # from now on, the digest of what was read
        if data is None:
            self.unreadable = "the file is missing"
            return
        try:
            fast, raw = _parse(data, "RenderStateShard", SHARD_VERSION)
            entries = _entries_from_json(raw.get("assignments")) if fast is None else None
        except (ValueError, KeyError, TypeError) as exc:
            self.unreadable = str(exc)
            return
        read = {aid: entry[0] for aid, entry in fast.items()} if fast is not None else entries
        assert read is not None
        foreign = _foreign_id(self.cluster_type, read)
        if foreign is not None:
            self.unreadable = foreign
            return
        if fast is not None:
            self.lines = fast
        self._entries = read

    def __len__(self) -> int:
        return self._count if self._entries is None else len(self._entries)

    def stored_bytes(self) -> bytes | None:
        """The bytes of the file that holds this shard (read now if needed); None when none does."""
        if not self.stored:
            return None
        if self._entries is None:
            self.entries  # noqa: B018 - reading it fills ``data``
        return self.data

    @property
    def members(self) -> str:
        if self._entries is None:
            return self._members
        if not self._members:
            self._members = members_digest(self._entries)
        return self._members

    def to_bytes(self) -> bytes:
        if self._entries is None and self.data is not None:
            return self.data
        lines = ["{"]
        head = {"apiVersion": "fleetflow.dev/v1alpha1", "kind": "RenderStateShard", "version": SHARD_VERSION,
                "clusterType": self.cluster_type}
        lines.extend(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items())
        lines.extend(_assignments_block(self.entries, self.lines))
        lines.append("}")
        return ("\n".join(line for line in lines if line) + "\n").encode()


class Assignments(Mapping[str, AssignmentState]):
    """Every assignment of a state, by id, kept as one :class:`Shard` per cluster type. Looking one up reads its
    shard only; iterating reads them all (in one batch). ``len`` never reads a shard."""

    def __init__(self, shards: Mapping[str, Shard] | None = None, read: ShardReader | None = None) -> None:
        self.shards: dict[str, Shard] = dict(shards or {})
        self._read = read

    @classmethod
    def of(cls, entries: Mapping[str, AssignmentState],
           lines: Mapping[str, tuple[AssignmentState, str]] | None = None) -> Assignments:
        grouped: dict[str, dict[str, AssignmentState]] = {}
        for aid, entry in entries.items():
            grouped.setdefault(aid.split("/", 1)[0], {})[aid] = entry
        return cls({ct: Shard(ct, found, lines=_lines_for(found, lines)) for ct, found in grouped.items()})

    def shard(self, cluster_type: str) -> Shard | None:
        return self.shards.get(cluster_type)

    def cluster_types(self) -> set[str]:
        return {ct for ct, shard in self.shards.items() if len(shard)}

    def read(self, cluster_types: Iterable[str] | None = None) -> None:
        """Read the shards of ``cluster_types`` (default: all) not read yet, in one call of the reader."""
        wanted = self.shards if cluster_types is None else cluster_types
        waiting = sorted({ct for ct in wanted if ct in self.shards and not self.shards[ct].loaded})
        if waiting and self._read is not None:
            found = self._read(waiting)
            for ct in waiting:
                self.shards[ct].take(found.get(ct))

    def missing(self, present: Iterable[str]) -> None:
        """Mark the stored shards whose file is not among ``present`` (paths relative to the output root) as read
        and empty: their cluster types are then rendered again instead of trusting an index that names a lost
        file (a render keeps what it cannot attribute: the files in those folders become foreign)."""
        have = set(present)
        for ct, shard in self.shards.items():
            if shard.stored and not shard.loaded and shard_path(ct) not in have:
                shard.take(None)

    def __getitem__(self, aid: str) -> AssignmentState:
        shard = self.shards.get(aid.split("/", 1)[0])
        if shard is None:
            raise KeyError(aid)
        return shard.entries[aid]

    def __contains__(self, aid: object) -> bool:
        if not isinstance(aid, str):
            return False
        shard = self.shards.get(aid.split("/", 1)[0])
        return shard is not None and aid in shard.entries

    def __iter__(self) -> Iterator[str]:
        self.read()
        for ct in sorted(self.shards):
            yield from self.shards[ct].entries

    def __len__(self) -> int:
        return sum(len(shard) for shard in self.shards.values())

    def __repr__(self) -> str:
        return f"Assignments({len(self)} in {len(self.shards)} shards)"


def _lines_for(entries: Mapping[str, AssignmentState],
               lines: Mapping[str, tuple[AssignmentState, str]] | None) -> dict[str, tuple[AssignmentState, str]]:
    if not lines:
        return {}
    return {aid: lines[aid] for aid in entries if aid in lines}


@dataclass
class RenderState:
    environment: str
    main_commit: str | None = None
    env_commit: str | None = None
    engine: str = ""
    assignments: Assignments = field(default_factory=Assignments)
    config_keys: dict[str, dict[str, str]] = field(default_factory=dict)  # ConfigMap -> key -> value hash
    clusters: list[ExpectedCluster] = field(default_factory=list)
    fingerprints: Fingerprints | None = None
    version: int = STATE_VERSION  # of the file it was read from (LEGACY_VERSION: no shard files stand yet)
    # the index's parts as read, by part (none from a version-2 or version-1 file): :meth:`part_files` compares
    stored_parts: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)
    # the state a render started from (read with its parts): :meth:`to_bytes` takes from it the bytes of every part
    # none of whose entries changed, instead of formatting them again (:meth:`_unchanged_parts`)
    base: RenderState | None = field(default=None, repr=False, compare=False)
    _parts: dict[str, bytes] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.assignments, Assignments):
            self.assignments = Assignments.of(self.assignments)

    def other_environment(self, environment: str, defined: Container[str]) -> str | None:
        """The environment this state is the output of, when it is not ``environment`` and main still ``defined``
        it: rendering ``environment`` over it would replace that environment's files. None otherwise: its own, an
        older state naming none, or the output of an environment main no longer defines (renamed or removed),
        which is taken over as before."""
        other = self.environment
        return other if other and other != environment and other in defined else None

    def written_among(self, changed: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
        """Of ``changed`` (paths relative to the output root), the files this state says fleetflow wrote: a file an
        assignment lists, or one in a cluster type's ``_status/`` folder; with the assignments and the cluster types
        (their reporters) whose files they are, each sorted: what :meth:`render_again` takes. Reads the shards of
        the cluster types the paths are in. Used for the files a later commit or a hand edit changed
        (:func:`fleetflow.promotion.gitops.hand_edits` on the GitOps branch, ``fleetflow render`` in a checkout)."""
        shards = self.assignments.shards
        paths: list[str] = []
        assignments: set[str] = set()
        reporters: set[str] = set()
        for path in changed:
            parts = path.split("/")
            if len(parts) != 3 or parts[0] not in shards:
                continue
            if parts[1] == STATUS_DIR:
                reporters.add(parts[0])
                paths.append(path)
                continue
            entry = self.assignments.get(f"{parts[0]}/{parts[1]}")
            if entry is not None and parts[2] in entry.files:
                assignments.add(f"{parts[0]}/{parts[1]}")
                paths.append(path)
        return sorted(paths), sorted(assignments), sorted(reporters)

    def render_again(self, assignments: Iterable[str], reporters: Iterable[str] = ()) -> None:
        """Make a render that starts from this state render ``assignments`` (ids this state has) and the
        ``_status/`` folders of the cluster types ``reporters`` again, though their inputs did not change: their
        files on the GitOps branch are not what fleetflow wrote (a hand edit, :func:`fleetflow.promotion.gitops.
        hand_edits`). Each is looked at as a held-back assignment is (``affected_assignments``) and its input hash is
        forgotten, so it is rendered; its files stay listed, so the render replaces them and deletes none it would
        not. Reads the shards of those cluster types."""
        fp = self.fingerprints
        for aid in assignments:
            shard = self.assignments.shard(aid.split("/", 1)[0])
            entry = shard.entries.get(aid) if shard is not None else None
            if shard is None or entry is None:
                continue
            shard.entries[aid] = entry._replace(input_hash="")
            if fp is not None and aid not in fp.held_back:
                fp.held_back.append(aid)
        if fp is not None and fp.reporters is not None:
            for ct in reporters:
                if ct in fp.reporters:
                    fp.reporters[ct] = "(edited by hand)"

    def to_bytes(self) -> bytes:
        """The index (``state.json``): the head, and the digest of each of its parts (:meth:`part_files`); the
        shards are :meth:`shard_files`. The parts made here are the ones :meth:`part_files` gives next."""
        self._parts = self._make_parts()
        head = {
            "apiVersion": "fleetflow.dev/v1alpha1",
            "kind": "RenderState",
            "version": STATE_VERSION,
            "environment": self.environment,
            "mainCommit": self.main_commit,
            "envCommit": self.env_commit,
            "engine": self.engine,
        }
        lines = ["{"]
        for key, value in head.items():
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
        if self.fingerprints is not None:
            lines.append('  "fingerprints": {')
            lines.append(f'    "heldBack": {_compact(sorted(self.fingerprints.held_back))},')
            lines.append(f'    "schemas": {json.dumps(self.fingerprints.schemas)}')
            lines.append("  },")
        lines.append('  "parts": {')
        lines.append(",\n".join(f'    "{part}": "{_digest(data)}"' for part, data in sorted(self._parts.items())))
        lines.append("  }")
        lines.append("}")
        return ("\n".join(line for line in lines if line) + "\n").encode()

    def _make_parts(self) -> dict[str, bytes]:
        """The index's parts, by part (:func:`index_part`): what the index records per cluster type (its clusters,
        fingerprint, reporter fingerprint, count and digest of assignment ids), per ConfigMap (key hashes,
        fingerprint and labels) and per deployment target (fingerprint), each in the part of its name. A change
        to a few of them rewrites a few parts, whatever the size of the fleet; and only those parts are formatted:
        every other one is the bytes it was read as (:meth:`_unchanged_parts`), the same bytes formatting would give
        (``tests/test_state_shards.py`` holds the two equal)."""
        fps = self.fingerprints.to_json() if self.fingerprints is not None else None
        shards = sorted((ct, s) for ct, s in self.assignments.shards.items() if len(s))
        names = {c.cluster_type for c in self.clusters} | self.config_keys.keys() | {ct for ct, _ in shards}
        if fps is not None:
            for section in _FINGERPRINT_MAPS:
                names.update(fps[section])
        whole = len(names) <= SMALL_INDEX
        part_of = {name: index_part(name, whole=whole) for name in names}
        kept = self._unchanged_parts(whole)
        parts: dict[str, _Part] = {}

        def part(name: str) -> _Part | None:
            key = part_of[name]
            found = parts.get(key)
            if found is None:
                if key in kept:
                    return None  # its bytes are the ones read: nothing in it changed
                found = parts[key] = _Part()
            return found

        # each section in the order of its names, so each part's lines are in that order too
        for c in sorted(self.clusters, key=lambda c: (c.cluster_type, c.name)):
            if (into := part(c.cluster_type)) is not None:
                into.clusters.append(_cluster_entry(c))
        for name, keys in sorted(self.config_keys.items()):
            if (into := part(name)) is not None:
                into.config_keys.append(_config_keys_line(name, keys))
        if fps is not None:
            for section in _FINGERPRINT_MAPS:
                for k, v in fps[section].items():
                    if (into := part(k)) is not None:
                        into.fingerprints[section].append(_fingerprint_line(k, v))
        for ct, s in shards:
            if (into := part(ct)) is not None:
                into.shards.append(_shard_line(ct, s))
        with_fingerprints = self.fingerprints is not None
        made = {key: found.to_bytes(key, with_fingerprints) for key, found in parts.items()}
        made.update((key, kept[key]) for key in set(part_of.values()) if key in kept)
        return dict(sorted(made.items()))

    def _unchanged_parts(self, whole: bool) -> dict[str, bytes]:
        """The parts of :attr:`base` (as read, by part) none of whose names has an entry that differs now, in any
        section: formatted again they would be the same bytes, so they are taken as they are. Every name whose
        entry was added, removed or changed marks its part; a part all of whose names are gone is not named by the
        new index, so whether it is here does not matter. Nothing is taken (every part is formatted) unless the
        base was read from parts this same engine wrote, split the same way (``whole``), with fingerprints as
        this state has them or without them as it has none."""
        base = self.base
        if (base is None or base.version != STATE_VERSION or not base.stored_parts or base.engine != self.engine
                or (base.fingerprints is None) != (self.fingerprints is None)
                or (WHOLE_PART in base.stored_parts) != whole):
            return {}
        changed = _changed_keys(base.config_keys, self.config_keys)
        if base.fingerprints is not None and self.fingerprints is not None:
            was, now = base.fingerprints, self.fingerprints
            changed |= _changed_keys(was.cluster_types, now.cluster_types)
            changed |= _changed_keys(was.targets, now.targets)
            changed |= _changed_keys(was.config_maps, now.config_maps)
            changed |= _changed_keys(was.reporters or {}, now.reporters or {})
        changed |= _changed_keys(_clusters_by_type(base.clusters), _clusters_by_type(self.clusters))
        before, after = base.assignments.shards, self.assignments.shards
        for ct in before.keys() | after.keys():
            was_shard, now_shard = before.get(ct), after.get(ct)
            if was_shard is now_shard:
                continue
            if was_shard is not None and was_shard.loaded:
                changed.add(ct)  # read: its count and digest are now its file's, which its part may not hold
                continue
            count = len(now_shard) if now_shard is not None else 0
            if count != (len(was_shard) if was_shard is not None else 0) or (
                    count and was_shard is not None and now_shard is not None
                    and was_shard.members != now_shard.members):
                changed.add(ct)
        dirty = {index_part(name, whole=whole) for name in changed}
        return {part: data for part, data in base.stored_parts.items() if part not in dirty}

    def part_files(self, previous: RenderState | None = None, present: Iterable[str] = ()) -> dict[str, bytes | None]:
        """The index's part files (relative to the output root) that differ from those ``previous`` was read
        with: new bytes, or None for a part to delete. The parts are those the last :meth:`to_bytes` made (so
        the index and its parts always agree), made now when it was not called.

        ``present``: the files the output's part folder holds now. Those named as fleetflow names parts
        (:func:`is_part_file`) that the new index does not name are deleted too: a part an unreadable state left
        (nothing then says which parts it had). Any other file there is left alone."""
        parts = self._parts if self._parts is not None else self._make_parts()
        before = previous.stored_parts if previous is not None else {}
        out: dict[str, bytes | None] = {
            part_path(part): data for part, data in sorted(parts.items()) if before.get(part) != data}
        out.update((part_path(part), None) for part in sorted(before.keys() - parts.keys()))
        named = {part_path(part) for part in parts}
        out.update((path, None) for path in sorted(present) if is_part_file(path) and path not in named)
        return out

    def shard_files(self, previous: RenderState | None = None) -> dict[str, bytes | None]:
        """The shard files (relative to the output root) that differ from those ``previous`` left: new bytes, or
        None for a shard to delete. A shard carried over unread from ``previous`` is not written again; without
        ``previous`` (or after a version-1 state, which has no shard files), every shard is written."""
        before = previous.assignments.shards if previous is not None and previous.version != LEGACY_VERSION else {}
        out: dict[str, bytes | None] = {}
        for ct, shard in sorted(self.assignments.shards.items()):
            if not len(shard):
                continue
            old = before.get(ct)
            if old is not None and shard is old and old.stored:
                continue  # the same shard, unread: its file stands as it is
            data = shard.to_bytes()
            if old is not None and old.stored_bytes() == data:
                continue
            out[shard_path(ct)] = data
        for ct, old in sorted(before.items()):
            if old.stored and not len(self.assignments.shards.get(ct) or ()):
                out[shard_path(ct)] = None
        return out

    @classmethod
    def from_bytes(cls, data: bytes, read_files: FileReader | None = None) -> RenderState:
        """Parse an index (its parts read through ``read_files`` now, its shards when first used), a whole index
        (version 2) or a version-1 state file; raises ValueError with a readable reason when it is none of them,
        or when a part is missing or is not the one the index names. The state lives until the run ends: it is
        made inside :func:`fleetflow.collector.kept`."""
        with kept():
            return cls._from_bytes(data, read_files)

    @classmethod
    def _from_bytes(cls, data: bytes, read_files: FileReader | None) -> RenderState:
        fast, raw = _parse(data, "RenderState", None)
        version = raw.get("version")
        if type(version) is int and version > STATE_VERSION:
            raise NewerState(version, str(raw.get("engine", "")))
        if version not in (STATE_VERSION, WHOLE_INDEX_VERSION, LEGACY_VERSION):
            raise ValueError(f"state version {version!r} is not {STATE_VERSION} "
                             f"(or {WHOLE_INDEX_VERSION} or {LEGACY_VERSION})")
        read = shard_reader(read_files) if read_files is not None else None
        stored_parts: dict[str, bytes] = {}
        if version == STATE_VERSION:
            raw, stored_parts = _with_parts(raw, read_files)
        if version in (STATE_VERSION, WHOLE_INDEX_VERSION):
            shards = {
                str(ct): Shard(str(ct), count=int(info["assignments"]), members=str(info["members"]), read=read,
                               stored=True)
                for ct, info in _mapping(raw.get("shards")).items()
            }
            assignments = Assignments(shards, read)
        elif fast is not None:
            assignments = Assignments.of({aid: entry[0] for aid, entry in fast.items()}, fast)
        else:
            assignments = Assignments.of(_entries_from_json(raw.get("assignments")))
        return cls(
            environment=str(raw.get("environment", "")),
            main_commit=raw.get("mainCommit"),
            env_commit=raw.get("envCommit"),
            engine=str(raw.get("engine", "")),
            assignments=assignments,
            config_keys={k: dict(v) for k, v in _mapping(raw.get("configKeys")).items()},
            fingerprints=Fingerprints.from_json(raw.get("fingerprints")),
            clusters=[
                ExpectedCluster(str(c["name"]), str(c["clusterType"]), c.get("statusContext"))
                for c in raw.get("clusters") or []
            ],
            version=int(version),
            stored_parts=stored_parts,
        )


def _with_parts(raw: dict[str, Any], read_files: FileReader | None) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A version-3 index with its parts read and merged in: the same mapping a version-2 index holds whole, and
    the parts' bytes by part. Raises ValueError when a part cannot be read, is missing, or is not the one the
    index names (its digest differs: edited by hand, or left from another state)."""
    parts = {str(k): str(v) for k, v in _mapping(raw.get("parts")).items()}
    found: Mapping[str, bytes | None] = {}
    if parts:
        if read_files is None:
            raise ValueError(f"the index's parts ({PART_DIR}/) were not read")
        found = read_files([part_path(p) for p in sorted(parts)])
    merged: dict[str, Any] = {**raw, "clusters": [], "configKeys": {}, "shards": {}}
    fingerprints = _mapping(raw.get("fingerprints"))
    maps: dict[str, dict[str, Any]] = {section: {} for section in _FINGERPRINT_MAPS}
    stored: dict[str, bytes] = {}
    for part, digest in sorted(parts.items()):
        data = found.get(part_path(part))
        if data is None:
            raise ValueError(f"the index names the part {part_path(part)}, which is missing")
        if _digest(data) != digest:
            raise ValueError(f"the part {part_path(part)} is not the one the index names: its digest differs")
        body = _json(data)
        if not isinstance(body, dict) or body.get("kind") != PART_KIND or body.get("part") != part:
            raise ValueError(f"{part_path(part)} is not the fleetflow {PART_KIND} {part}")
        merged["clusters"].extend(body.get("clusters") or [])
        merged["configKeys"].update(_mapping(body.get("configKeys")))
        merged["shards"].update(_mapping(body.get("shards")))
        for section in _FINGERPRINT_MAPS:
            maps[section].update(_mapping(_mapping(body.get("fingerprints")).get(section)))
        stored[part] = data
    # in the order a whole index holds them (each part holds its own in order)
    merged["clusters"].sort(key=lambda c: str(c.get("name")) if isinstance(c, dict) else "")
    for key in ("configKeys", "shards"):
        merged[key] = dict(sorted(merged[key].items()))
    maps = {section: dict(sorted(found_map.items())) for section, found_map in maps.items()}
    if "fingerprints" in raw:
        merged["fingerprints"] = {**fingerprints, **maps} if isinstance(raw["fingerprints"], dict) else None
    return merged, stored


class _Part:
    """The lines of one part of the index while it is made (:meth:`RenderState.to_bytes`)."""

    __slots__ = ("clusters", "config_keys", "fingerprints", "shards")

    def __init__(self) -> None:
        self.clusters: list[str] = []
        self.config_keys: list[str] = []
        self.fingerprints: dict[str, list[str]] = {section: [] for section in _FINGERPRINT_MAPS}
        self.shards: list[str] = []

    def to_bytes(self, part: str, with_fingerprints: bool) -> bytes:
        """The part's file: its head, then each section it has entries in (one entry a line), in the order and
        the lines of a whole index (version 2)."""
        sections: list[str] = []
        if self.clusters:
            sections.append('  "clusters": [\n' + ",\n".join("    " + c for c in self.clusters) + "\n  ]")
        if self.config_keys:
            sections.append('  "configKeys": {\n' + ",\n".join(self.config_keys) + "\n  }")
        maps = [f'    "{name}": {{\n' + ",\n".join(self.fingerprints[name]) + "\n    }"
                for name in _FINGERPRINT_MAPS if self.fingerprints[name]]
        if with_fingerprints and maps:
            sections.append('  "fingerprints": {\n' + ",\n".join(maps) + "\n  }")
        if self.shards:
            sections.append('  "shards": {\n' + ",\n".join(self.shards) + "\n  }")
        head = (f'{{\n  "apiVersion": "fleetflow.dev/v1alpha1",\n  "kind": "{PART_KIND}",\n'
                f'  "version": {STATE_VERSION},\n  "part": "{part}"')
        return (",\n".join([head, *sections]) + "\n}\n").encode()


def _digest(data: bytes) -> str:
    """The digest of a part's bytes that the index records."""
    return hashlib.sha256(data).hexdigest()[:32]


def earlier_format(previous: RenderState | None) -> int | None:
    """The format ``previous`` was written in, when it is an earlier one than :data:`STATE_VERSION` (None when it
    is not, or when there was no state): a commit written over it converts the state's files, once. The pull
    request says so, so that a reviewer who sees them change knows why."""
    return None if previous is None or previous.version == STATE_VERSION else previous.version


def shard_reader(read_files: FileReader) -> ShardReader:
    """A :data:`ShardReader` over a function that reads files by path (relative to the output root)."""

    def read(cluster_types: list[str]) -> dict[str, bytes | None]:
        found = read_files([shard_path(ct) for ct in cluster_types])
        return {ct: found.get(shard_path(ct)) for ct in cluster_types}

    return read


def removed_assignments(previous: RenderState | None, current: RenderState) -> list[str]:
    """Ids in ``previous`` that ``current`` no longer has, reading only shards that are not carried over."""
    if previous is None:
        return []
    gone: list[str] = []
    previous.assignments.read(ct for ct, old in previous.assignments.shards.items()
                              if current.assignments.shards.get(ct) is not old)
    for ct, old in previous.assignments.shards.items():
        new = current.assignments.shards.get(ct)
        if new is old:
            continue
        now = new.entries if new is not None else {}
        gone.extend(aid for aid in old.entries if aid not in now)
    return sorted(gone)


def _parse(data: bytes, kind: str,
           version: int | None) -> tuple[dict[str, tuple[AssignmentState, str]] | None, dict[str, Any]]:
    """The head of a state file as json, and its assignments block read line by line when it has the layout
    ``_assignments_block`` writes (a split per line instead of a JSON object per assignment; None otherwise)."""
    text = data.decode()
    start = text.find(_ASSIGNMENTS_OPEN)
    end = text.find(_ASSIGNMENTS_CLOSE, start) if start >= 0 else -1
    fast: dict[str, tuple[AssignmentState, str]] | None = None
    if start >= 0 and end >= 0 and "\\" not in text[start:end]:
        raw = _json(text[:start] + '\n  "assignments": {}\n}\n')
        fast = _fast_lines(text[start + len(_ASSIGNMENTS_OPEN) : end])
    else:
        raw = _json(text)
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        raise ValueError(f"not a fleetflow {kind}")
    if version is not None and raw.get("version") != version:
        raise ValueError(f"{kind} version {raw.get('version')!r} is not {version}")
    if fast is None and start >= 0:
        raw = _json(text)
    return fast, raw


def _json(text: str | bytes) -> Any:
    """``json.loads``, with JSON nested too deeply for it (``[`` 100,000 times: a RecursionError, a traceback in
    every command that read the state until 2026-11-28) a ValueError like any other state that does not read."""
    try:
        with paused():  # no collection down in the parse of a state nested thousands deep
            return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def _fast_lines(block: str) -> dict[str, tuple[AssignmentState, str]] | None:
    fast: dict[str, tuple[AssignmentState, str]] = {}
    if not block:
        return fast
    file_lists: dict[str, tuple[str, ...]] = {}  # most assignments share one list of file names
    make = AssignmentState._make
    for line in block.split(",\n"):
        try:
            aid, rest = line[5:].split(_CONTENT, 1)
            content, rest = rest.split(_FILES, 1)
            files, input_hash = rest.split(_INPUT, 1)
        except ValueError:
            return None
        if not line.startswith('    "') or not input_hash.endswith('"}') or '"' in content \
                or input_hash.count('"') != 1:  # only the closing quote: no copy of each line's hash to look in
            return None
        names = file_lists.get(files)
        if names is None:
            quoted = files.split(", ") if files else []
            if not all(len(f) > 2 and f[0] == f[-1] == '"' and '"' not in f[1:-1] and "/" not in f
                       and f not in _DOTS for f in quoted):
                return None  # not a list of file names as fleetflow writes it: the careful read says what it is
            names = file_lists[files] = tuple(f[1:-1] for f in quoted)
        fast[aid] = (make((input_hash[:-2], content, names)), line)
    return fast


def _entries_from_json(raw: Any) -> dict[str, AssignmentState]:
    """The assignments of a shard read as JSON; ValueError for one that is not as fleetflow writes it (the shard is
    then unreadable: its cluster type is rendered again), rather than a crash when it is written back."""
    entries = {}
    for aid, a in _mapping(raw).items():
        files = a.get("files") if isinstance(a, dict) else None
        if not (isinstance(a, dict) and type(a.get("input")) is str and type(a.get("content")) is str
                and isinstance(files, list) and all(type(f) is str and f for f in files)):
            raise ValueError(f"assignment {aid}: not an input hash, a content hash and a list of file names")
        odd = next((f for f in files if "/" in f or f in (".", "..")), None)
        if odd is not None:  # a hand edit: fleetflow writes no such file, and must never delete by it
            raise ValueError(f"assignment {aid} lists the file {odd!r}, which is not a name of a file in its folder")
        entries[aid] = AssignmentState(a["input"], a["content"], tuple(files))
    return entries


_DOTS = ('"."', '".."')  # quoted as in a shard's line: the names of no file


def _foreign_id(cluster_type: str, entries: Mapping[str, AssignmentState]) -> str | None:
    """Why the state shard of ``cluster_type`` holds an assignment id fleetflow never writes there (None: every id
    is ``<cluster type>/<target>``): an id of another cluster type, or one whose target is not a folder name
    (``aks/../..``). A hand edit: until 2026-11-29 such an id was taken as it was, so ``schedule`` stopped with git's
    "relative path syntax can't be used outside working tree", ``render`` with "refusing to write outside the output
    directory", and an id of another cluster type was listed as a removed assignment. The shard then does not read
    (its cluster type is rendered again and the shard rewritten; the render warns, naming the shard). One pass over
    the joined ids (about 0.1 µs an assignment), a loop only when it finds something."""
    if not entries:
        return None
    prefix, count = f"{cluster_type}/", len(entries)
    ids = "\n".join(entries)
    if (ids.startswith(prefix) and ids.count("\n") == count - 1 and ids.count("\n" + prefix) == count - 1
            and ids.count("/") == count and "/\n" not in ids and "/.\n" not in ids and "/..\n" not in ids
            and not ids.endswith(("/", "/.", "/.."))):
        return None
    for aid in entries:
        target = aid[len(prefix):] if aid.startswith(prefix) else "/"
        if "/" in target or "\n" in target or target in ("", ".", ".."):
            return f"it lists {aid!r}, which is not an assignment of cluster type {cluster_type}"
    return None


def _assignments_block(entries: Mapping[str, AssignmentState],
                       known: Mapping[str, tuple[AssignmentState, str]]) -> list[str]:
    def line(aid: str, a: AssignmentState) -> str:
        was = known.get(aid)
        return was[1] if was is not None and was[0] is a else _assignment_line(aid, a)

    return ['  "assignments": {', ",\n".join(line(aid, a) for aid, a in sorted(entries.items())), "  }"]


_ASSIGNMENTS_OPEN = '\n  "assignments": {\n'
_ASSIGNMENTS_CLOSE = "\n  }\n}"
_CONTENT = '": {"content": "'
_FILES = '", "files": ['
_INPUT = '], "input": "'


def _assignment_line(aid: str, a: AssignmentState) -> str:
    """Same bytes as ``_compact`` gives, formatted by hand when every part is plain (names are validated, hashes
    are hex): json.dumps for 100,000 lines was most of the time of a re-render with no change."""
    if _plain("".join((aid, a.input_hash, a.content_hash, *a.files))):
        files = ", ".join(f'"{f}"' for f in a.files)
        return f'    "{aid}": {{"content": "{a.content_hash}", "files": [{files}], "input": "{a.input_hash}"}}'
    return f"    {json.dumps(aid)}: " + _compact(
        {"input": a.input_hash, "content": a.content_hash, "files": list(a.files)}
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


_ABSENT = object()


def _changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    """The keys added, removed, or whose value differs, between two mappings."""
    changed = {key for key, value in after.items() if before.get(key, _ABSENT) != value}
    changed.update(before.keys() - after.keys())
    return changed


def _clusters_by_type(clusters: Iterable[ExpectedCluster]) -> dict[str, list[tuple[str, str | None]]]:
    """Cluster type -> its clusters' (name, status context), by name: what the index's part of the cluster type
    holds of them."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for c in sorted(clusters, key=lambda c: c.name):
        found.setdefault(c.cluster_type, []).append((c.name, c.status_context))
    return found


_FINGERPRINT_MAPS = ("clusterTypes", "configMaps", "reporters", "targets")  # in the index, one entry a line


def _string(text: str) -> str:
    """``json.dumps(text)``, formatted by hand when the text is plain (one line per cluster type in the index)."""
    return f'"{text}"' if _plain(text) else json.dumps(text)


def _plain(text: str) -> bool:
    """Whether json writes ``text`` as it is, between quotes."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _config_keys_line(name: str, keys: Mapping[str, str]) -> str:
    """A ConfigMap's key hashes, as a line of the index (of a part; of a whole index before version 3)."""
    return f"    {_string(name)}: {_compact(keys)}"


def _fingerprint_line(name: str, value: Any) -> str:
    """A fingerprint (a ConfigMap's is a list: with its labels), as a line of the index."""
    return f"      {_string(name)}: {_string(value) if isinstance(value, str) else _compact(value)}"


def _shard_line(cluster_type: str, shard: Shard) -> str:
    """A cluster type's count of assignments and digest of their ids, as a line of the index."""
    return f'    {_string(cluster_type)}: {{"assignments": {len(shard)}, "members": {_string(shard.members)}}}'


def _cluster_entry(c: ExpectedCluster) -> str:
    """``_compact`` of a cluster's entry in the index, formatted by hand when its parts are plain."""
    if all(_plain(t) for t in (c.name, c.cluster_type, c.status_context or "")):
        context = "null" if c.status_context is None else f'"{c.status_context}"'
        return f'{{"clusterType": "{c.cluster_type}", "name": "{c.name}", "statusContext": {context}}}'
    return _compact({"name": c.name, "clusterType": c.cluster_type, "statusContext": c.status_context})


_COMPACT = json.JSONEncoder(sort_keys=True, separators=(", ", ": "), ensure_ascii=False).encode  # made once


def _compact(value: Any) -> str:
    return _COMPACT(value)


# --- what a change touches ------------------------------------------------------------------------------


def _targets_touched_by(
    labels: Mapping[str, str], environment: str, cluster_types: Mapping[str, Mapping[str, str]],
    targets: Mapping[str, Target],
) -> dict[str, set[str]]:
    """cluster type -> targets, for every pair a ConfigMap with ``labels`` applies to. Each side is asked only for
    the facts the ConfigMap wants: a lookup or two per cluster type, not a set of its labels."""
    wanted = requirement_facts(labels)
    by_ct: dict[frozenset[Fact], list[str]] = {}
    for name, ct_labels in cluster_types.items():
        by_ct.setdefault(cluster_side_wanted(wanted, environment, name, ct_labels), []).append(name)
    by_target: dict[frozenset[Fact], list[str]] = {}
    for tid, target in targets.items():
        by_target.setdefault(target_side_wanted(wanted, tid, target.workload, target.labels), []).append(tid)
    touched: dict[str, set[str]] = {}
    for ct_sat, ct_names in by_ct.items():
        for t_sat, tids in by_target.items():
            if ct_sat | t_sat == wanted:
                for ct in ct_names:
                    touched.setdefault(ct, set()).update(tids)
    return touched


def affected_assignments(
    previous: Fingerprints, current: Fingerprints, by_type: Mapping[str, tuple[str, ...]], environment: str,
    cluster_types: Mapping[str, Mapping[str, str]], targets: Mapping[str, Target],
) -> dict[str, set[str]] | None:
    """The assignments that may render differently, as cluster type -> its targets among them (a cluster type with
    none is left out); None when everything must be looked at. ``by_type``: the schedule (cluster type -> its
    targets; cluster types picked by the same policies share one tuple). The cost is per cluster type and per
    kind of cluster type, never per assignment: a change of one target is looked up once per kind."""
    if previous.schemas != current.schemas:
        return None  # validation results may change anywhere
    # (a removed cluster type or target is in none of the schedule's pairs: being here too changes nothing)
    changed_ct = _changed_keys(previous.cluster_types, current.cluster_types)
    changed_t = _changed_keys(previous.targets, current.targets)
    touched: dict[str, set[str]] = {}
    for name in set(previous.config_maps) | set(current.config_maps):
        before, now = previous.config_maps.get(name), current.config_maps.get(name)
        if before == now:
            continue
        label_sets = [side[1] for side in (before, now) if side is not None]
        if len(label_sets) == 2 and label_sets[0] == label_sets[1]:
            label_sets.pop()  # its data changed, its labels not: the same pairs, looked up once
        for ct_labels in label_sets:
            for ct, pairs in _targets_touched_by(ct_labels, environment, cluster_types, targets).items():
                touched.setdefault(ct, set()).update(pairs)
    held: dict[str, set[str]] = {}
    for aid in previous.held_back:
        ct, _, target = aid.partition("/")
        held.setdefault(ct, set()).add(target)
    per_kind: dict[int, set[str]] = {}  # id of a shared targets tuple -> its changed targets
    affected: dict[str, set[str]] = {}
    for ct, tids in by_type.items():
        if ct in changed_ct:
            affected[ct] = set(tids)
            continue
        found = per_kind.get(id(tids))
        if found is None:
            found = per_kind[id(tids)] = changed_t.intersection(tids) if changed_t else set()
        extra = touched.get(ct)
        if extra:
            found = found | extra.intersection(tids)
        if found:
            affected[ct] = set(found)
    for ct, names in held.items():  # held back last time: looked at again, scheduled or not
        affected.setdefault(ct, set()).update(names)
    return affected

"""Broken inputs: each gives a clear message naming file and line, exit code 1, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import ENV_FILES, MAIN_FILES, make_plane, run_cli, tree_bytes

CT_HEAD = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: ClusterType
    metadata:
      name: {name}
      labels:
        region: eu
    spec:
"""


def deep(levels: int) -> str:
    """A ConfigMap whose one value is a list nested ``levels`` deep."""
    return ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n  labels: {platform-config: "true"}\n'
            f"data:\n  k: {'[' * levels}{']' * levels}\n")


def laughs(levels: int, tail: str = "") -> str:
    """A ConfigMap whose aliases nest ``levels`` deep, nine to a list: a few hundred bytes, 9**(levels+1) values
    built out (the "billion laughs"). ``tail``: more text after it."""
    lines = ["  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n  labels: {platform-config: "true"}\n'
            "data:\n" + "\n".join(lines) + "\n" + tail)


GITOPS = ("apiVersion: fleetflow.dev/v1alpha1\nkind: GitOpsRepo\nmetadata:\n  name: dev\nspec:\n"
          "  branch: dev\n{extra}\n  repo: https://example.invalid/gitops\n")


def ct(name: str, body: str = "reconciler: flux\n  namespaceService: namespace\n  configType: config") -> str:
    return CT_HEAD.format(name=name) + "      " + body.replace("\n", "\n    ") + "\n"


WL = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Workload
    metadata:
      name: {name}
    spec:
      workspace: team-a
      deploymentTargets:
        - name: {target}
          environment: dev
          labels:
            purpose: test
          manifests:
            path: ./x
"""

TPL = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Template
    metadata:
      name: flux
    spec:
      type: reconciler
      manifests:
        - |
          kind: Thing
          name: {body}
"""

JSON_CONFIG = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Template
    metadata:
      name: config
    spec:
      type: config
      contentType: json
      manifests:
        - |
          {"namespace": {{ Namespace }}}
"""

SCHEMA = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: ConfigSchema
    metadata:
      name: {name}
    spec:
      schema: {schema}
"""

# (id, main overrides, env overrides, expected text in the message, expected "file:line" fragment)
CASES: list[tuple[str, dict[str, str], dict[str, str], str, str]] = [
    (
        "broken-yaml-indent",
        {},
        {"bad.yaml": "kind: ConfigMap\n  name: x\n bad: [\n"},
        "invalid YAML",
        "bad.yaml:",
    ),
    ("broken-yaml-unclosed-quote", {}, {"bad.yaml": 'a: "unclosed\nb: 1\n'}, "invalid YAML", "bad.yaml:"),
    (
        "duplicate-key",
        {},
        {"dup.yaml": "apiVersion: v1\napiVersion: v1\nkind: ConfigMap\n"},
        "duplicate key",
        "dup.yaml:2",
    ),
    ("document-not-mapping", {}, {"list.yaml": "- a\n- b\n"}, "not a mapping", "list.yaml"),
    (
        "missing-kind",
        {},
        {"nokind.yaml": "apiVersion: v1\nmetadata:\n  name: x\n"},
        "has no kind",
        "nokind.yaml:1",
    ),
    (
        "unknown-kind",
        {},
        {"dep.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n"},
        "unknown kind 'Deployment'",
        "dep.yaml:2",
    ),
    (
        "unknown-api-version",
        {},
        {"ct.yaml": ct("x").replace("fleetflow.dev/v1alpha1", "fleetflow.dev/v9")},
        "unsupported apiVersion",
        "ct.yaml:1",
    ),
    (
        "configmap-wrong-api",
        {},
        {
            "cm.yaml": "apiVersion: v2\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n"
            "    platform-config: 'true'\ndata: {}\n"
        },
        "apiVersion v1",
        "cm.yaml:1",
    ),
    (
        "configmap-not-platform",
        {},
        {"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {}\n"},
        "not labelled platform-config",
        "cm.yaml:3",
    ),
    (
        "missing-name",
        {},
        {
            "ct.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata: {}\n"
            "spec:\n  clusterType: cloud-eu\n"
        },
        "metadata.name is missing",
        "ct.yaml:3",
    ),
    ("invalid-name", {}, {"ct.yaml": ct("Bad_Name")}, "invalid name 'Bad_Name'", "ct.yaml:4"),
    # a name that is not text was "missing", one too long got the characters' hint alone (until 2026-11-28)
    ("name-a-list", {}, {"ct.yaml": ct("123").replace("name: 123", "name: [a, b]")},
     "metadata.name is a list, not text", "ct.yaml:4"),
    ("name-too-long", {}, {"ct.yaml": ct("a" * 300)}, "(300 characters)", "ct.yaml:4"),
    ("name-escapes-output", {}, {"ct.yaml": ct("../../etc")}, "invalid name '../../etc'", "ct.yaml:4"),
    (
        "target-name-escapes-output",
        {"workloads/evil.yaml": WL.format(name="evil", target="../../x")},
        {},
        "not a valid folder name",
        "evil.yaml:8",
    ),
    (
        "duplicate-name",
        {},
        {"ct2.yaml": ct("cloud-eu")},
        "duplicate ClusterType name 'cloud-eu'",
        "ct2.yaml:4",
    ),
    (
        "duplicate-target",
        {
            "workloads/two.yaml": WL.format(name="app2", target="dev") + "        - name: dev\n"
            "          environment: dev\n"
        },
        {},
        "defined twice",
        "two.yaml:14",
    ),
    (
        "missing-required-field",
        {},
        {"ct.yaml": ct("x", "reconciler: flux\n  namespaceService: namespace")},
        "spec.configType: required field is missing",
        "ct.yaml",
    ),
    (
        "unknown-field-typo",
        {},
        {
            "ct.yaml": ct(
                "x",
                "reconciller: flux\n  reconciler: flux\n  namespaceService: namespace\n  configType: config",
            )
        },
        "spec.reconciller: unknown field",
        "ct.yaml:8",
    ),
    (
        "wrong-type",
        {},
        {
            "cl.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: c\n"
            "spec:\n  clusterType: [a]\n"
        },
        "clusterType",
        "cl.yaml:6",
    ),
    (
        "unknown-template",
        {},
        {"ct.yaml": ct("x", "reconciler: flucks\n  namespaceService: namespace\n  configType: config")},
        "unknown template 'flucks'",
        "ct.yaml:8",
    ),
    (
        "template-of-wrong-type",
        {},
        {"ct.yaml": ct("x", "reconciler: namespace\n  namespaceService: namespace\n  configType: config")},
        "of type namespace, not reconciler",
        "ct.yaml:8",
    ),
    (
        "unknown-cluster-type-in-cluster",
        {},
        {
            "clusters.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\n"
            "metadata:\n  name: c1\nspec:\n  clusterType: nope\n"
        },
        "unknown clusterType 'nope'",
        "clusters.yaml:6",
    ),
    (
        "selector-bad-operator",
        {},
        {
            "policies.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: SchedulingPolicy\n"
            "metadata:\n  name: p\nspec:\n  clusterTypeSelector:\n    labelSelector:\n"
            "      matchExpressions:\n        - key: region\n          operator: Equals\n"
            "          values: [eu]\n  deploymentTargetSelector:\n    labelSelector: {}\n"
        },
        "operator",
        "policies.yaml:10",
    ),
    (
        "selector-in-without-values",
        {},
        {
            "policies.yaml": "apiVersion: fleetflow.dev/v1alpha1\n"
            "kind: SchedulingPolicy\nmetadata:\n  name: p\nspec:\n"
            "  clusterTypeSelector:\n    labelSelector:\n      matchExpressions:\n"
            "        - key: region\n          operator: In\n"
            "  deploymentTargetSelector:\n    labelSelector: {}\n"
        },
        "needs a non-empty 'values'",
        "policies.yaml:9",
    ),
    (
        "template-syntax-error",
        {"templates/flux.yaml": TPL.format(body="{{ DeploymentTargetName ")},
        {},
        "flux",
        "flux.yaml:10",
    ),
    (
        "template-undefined-variable",
        {"templates/flux.yaml": TPL.format(body="{{ NoSuchVariable }}")},
        {},
        "NoSuchVariable",
        "flux.yaml:10",
    ),
    (
        "template-sandbox-escape",
        {"templates/flux.yaml": TPL.format(body="{{ ''.__class__.__mro__[1].__subclasses__() }}")},
        {},
        "unsafe",
        "flux.yaml",
    ),
    (
        "template-unknown-filter",
        {"templates/flux.yaml": TPL.format(body="{{ Namespace | nosuchfilter }}")},
        {},
        "nosuchfilter",
        "flux.yaml:10",
    ),
    # a loop rendering more than GitHub takes in one file (100 MB): until 2026-11-28 it was written (300 MB a file
    # in the bad-input hunt), or, larger, filled memory; counted as it renders now, and stopped past the limit
    (
        "template-renders-too-much",
        {"templates/flux.yaml": TPL.format(body="{% for i in range(101) %}{{ 'x' * 1000000 }}{% endfor %}")},
        {},
        "renders more than 100 MB (GitHub refuses a file over 100 MB)",
        "flux.yaml:9",
    ),
    (  # "TypeError: no loader for this environment specified" until 2026-11-28
        "template-include",
        {"templates/flux.yaml": TPL.format(body="{% include 'other.yaml' %}")},
        {},
        "include, extends and import are not available: a template reads no other file",
        "flux.yaml:",
    ),
    (
        "template-indent-too-wide",  # 10**9 spaces a line was a MemoryError traceback
        {"templates/flux.yaml": TPL.format(body="{{ Namespace | indent(10**9) }}")},
        {},
        "indent width 1000000000: give a whole number from 0 to 1000",
        "flux.yaml:10",
    ),
    (
        "template-bad-type",
        {"templates/flux.yaml": TPL.format(body="x").replace("type: reconciler", "type: operator")},
        {},
        "spec.type",
        "flux.yaml:6",
    ),
    (
        "schema-violation",
        {
            "schemas/s.yaml": SCHEMA.format(
                name="s", schema="{type: object, properties: {REPLICAS: {pattern: '^[0-9]+$', maxLength: 0}}}"
            )
        },
        {},
        "REPLICAS",
        "configs.yaml:9",
    ),
    (
        "schema-missing-required",
        {"schemas/s.yaml": SCHEMA.format(name="s", schema="{required: [DB_HOST]}")},
        {},
        "DB_HOST",
        "s.yaml:6",
    ),
    (  # schema text whose key is a list holding a list: ruamel's TypeError was a traceback
        "schema-text-with-a-list-key",
        {"schemas/s.yaml": SCHEMA.format(name="s", schema="'type: object\n\n        ? [a, [b]]\n\n        : 1'")},
        {},
        "schema text does not parse: line 2 of the text: invalid YAML: a key that is a list or a mapping",
        "s.yaml:6",
    ),
    (
        "schema-itself-invalid",
        {"schemas/s.yaml": SCHEMA.format(name="s", schema="{type: 12}")},
        {},
        "invalid JSON Schema",
        "s.yaml:6",
    ),
    (
        "unknown-schema-ref",
        {
            "workloads/app.yaml": WL.format(name="app", target="dev").replace(
                "      workspace: team-a", "      workspace: team-a\n      configSchemas: [nope]"
            )
        },
        {},
        "unknown ConfigSchema 'nope'",
        "app.yaml:7",
    ),
    (
        "bad-priority-annotation",
        {},
        {
            "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n"
            "    platform-config: 'true'\n  annotations:\n"
            "    fleetflow.dev/priority: high\ndata: {}\n"
        },
        "must be an integer",
        "cm.yaml:8",
    ),
    (
        "environment-unknown-after",
        {
            ".environments/prod.yaml": "apiVersion: fleetflow.dev/v1alpha1\n"
            "kind: Environment\nmetadata:\n  name: prod\nspec:\n  after: [staging]\n"
        },
        {},
        "unknown environment 'staging'",
        "prod.yaml:6",
    ),
    (  # pydantic read true as 1: the gate expected one cluster, and validate said ok (until 2026-11-29)
        "environment-min-clusters-a-boolean",
        {
            ".environments/prod.yaml": "apiVersion: fleetflow.dev/v1alpha1\n"
            "kind: Environment\nmetadata:\n  name: prod\nspec:\n  after: [dev]\n  rollout:\n    minClusters: true\n"
        },
        {},
        "Environment prod: spec.rollout.minClusters is a boolean, not a whole number",
        "prod.yaml:8:18",
    ),
    (  # longer than a timedelta holds: an OverflowError traceback until 2026-11-28
        "environment-soak-time-too-long",
        {
            ".environments/prod.yaml": "apiVersion: fleetflow.dev/v1alpha1\n"
            "kind: Environment\nmetadata:\n  name: prod\nspec:\n  rollout:\n    soakTime: 99999999999999999999h\n"
        },
        {},
        "is too long: give one under 999,999,999 days",
        "prod.yaml:7",
    ),
    (
        "environment-label-github-refuses",
        {
            ".environments/qa.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n"
            "  name: qa\nspec:\n  after: [dev]\n  pullRequest:\n    labels: [" + "x" * 51 + "]\n"
        },
        {},
        "GitHub takes at most 50",
        "qa.yaml:8",
    ),
    (
        "environment-reviewer-not-a-login",
        {
            ".environments/qa.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\nmetadata:\n"
            "  name: qa\nspec:\n  after: [dev]\n  pullRequest:\n    reviewers: [contoso-qa-lead, -qa-]\n"
        },
        {},
        "reviewer '-qa-' is neither a GitHub login",
        "qa.yaml:8",
    ),
    (
        "environment-cycle",
        {
            ".environments/dev.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Environment\n"
            "metadata:\n  name: dev\nspec:\n  after: [qa]\n---\napiVersion: fleetflow.dev/v1alpha1\n"
            "kind: Environment\nmetadata:\n  name: qa\nspec:\n  after: [dev]\n"
        },
        {},
        "cycle",
        "dev.yaml",
    ),
    ("kind-on-wrong-branch", {"ct.yaml": ct("stray")}, {}, "does not belong on the main branch", "ct.yaml:2"),
    (
        "label-not-string",
        {},
        {"ct.yaml": ct("x").replace("region: eu", "region: {a: 1}")},
        "must be a string",
        "ct.yaml:6",
    ),
    # a document nested past what any step that walks it can take (tests/test_yaml_reading.py has the boundary):
    # thousands of levels end the parsers themselves (a RecursionError until 2026-11-28), 150 a later step
    ("nested-too-deep-to-parse", {}, {"deep.yaml": deep(5000)}, "YAML nested too deeply to read", "deep.yaml"),
    ("nested-deeper-than-read", {}, {"deep.yaml": deep(150)}, "nested more than 100 levels", "deep.yaml:1"),
    # aliases (YAML 1.2.2, 3.2.2.2 "Anchors and Aliases"): one inside the node it names made the reader loop for
    # ever, and nested ones built a 500-byte file out to billions of values (a MemoryError after 30 s at 4 GB),
    # until 2026-11-28; the tab sends the file to ruamel.yaml's careful reader, which hung the same way
    ("alias-inside-its-node", {}, {"loop.yaml": deep(1).replace("k: []", "k: &a [1, *a]")},
     "an alias inside the node it names", "loop.yaml:7:6"),
    ("aliases-built-out-huge", {}, {"lol.yaml": laughs(9)}, "aliases build the document out to 4,412,961,530 values",
     "lol.yaml:1:1"),
    # a line of .fleetflowignore that is no pattern: pathspec's ValueError or re.error, a traceback until 2026-11-28
    ("ignore-line-not-a-pattern", {}, {".fleetflowignore": "ok/\n!\n"}, "not a pattern: '!'", ".fleetflowignore:2"),
    ("ignore-line-bad-range", {}, {".fleetflowignore": "[z-a]\n"}, "not a pattern: '[z-a]'", ".fleetflowignore:1"),
    # an escape of half a surrogate pair: ruamel.yaml read it into a string no UTF-8 can hold, and validate stopped
    # with a UnicodeEncodeError traceback (a bug hunt, 2026-11-28); libyaml and go-yaml refuse the escape
    ("surrogate-escape", {}, {"s.yaml": 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\n  labels: '
                                        '{platform-config: "true"}\ndata:\n  URL: "https://x\\ud800"\n'},
     "invalid YAML: the escape \\ud800 is half of a UTF-16 surrogate pair, not a character", "s.yaml:7:18"),
    # a POSIX class, which git reads and pathspec does not: the reason in the user's words, not the regular
    # expression pathspec made of the line ("missing ]: [[:alpha:]\]z(?:(?P<ps_d>/)|$)", a bug hunt, 2026-11-28)
    ("ignore-line-posix-class", {}, {".fleetflowignore": "ok/\n[[:alpha:]]z\n"},
     "not a pattern: '[[:alpha:]]z' (missing ]) (hint: fleetflow does not read POSIX classes such as [[:alpha:]] "
     "(git does): write the characters out", ".fleetflowignore:2"),
    # where the output goes, checked where it is written: until 2026-11-28 validate and render took a path leaving
    # the GitOps repo, or a branch git would read as an option, and only schedule refused them, with no line
    ("gitops-path-leaves-the-repo", {}, {"gitops-repo.yaml": GITOPS.format(extra="  path: ../../x")},
     "'../../x' leaves the GitOps repo", "gitops-repo.yaml:7"),
    ("gitops-branch-an-option", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "branch: dev", "branch: --upload-pack=x")},
     "'--upload-pack=x' is not a usable branch name: it starts with '-' (git would read it as an option)",
     "gitops-repo.yaml:6"),
    # a branch git or GitHub refuses to write: validate said ok, and schedule's push failed (git: "is not a valid
    # branch name"; GitHub: "GH005: Sorry, refs longer than 255 bytes are not allowed"), until 2026-11-29
    ("gitops-branch-empty-part", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "branch: dev", "branch: team//dev")}, "'team//dev' is not a usable branch name: it has an empty part",
     "gitops-repo.yaml:6"),
    ("gitops-branch-too-long", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "branch: dev", "branch: " + "d" * 245)}, "branch name of 245 characters: GitHub takes at most 244",
     "gitops-repo.yaml:6"),
    # a workload's manifests branch was not checked at all: git's fetch refused it when a schedule ran
    ("manifests-branch-part-starts-with-dot", {"workloads/app.yaml": WL.format(name="app", target="dev").replace(
        "path: ./x", "path: ./x\n            branch: release/.next")}, {},
     "Workload app: spec.deploymentTargets.0.manifests.branch: 'release/.next' is not a usable branch name: it has "
     "a part starting with '.' ('.next')",
     "app.yaml:14:17"),
    # a key with nothing after it: "spec.repo: Input should be a valid string, got None" at the line below (here
    # a line past the file's end) until 2026-11-28; now in words, just after the key's ':'
    ("gitops-repo-empty", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "repo: https://example.invalid/gitops", "repo:")}, "GitOpsRepo dev: spec.repo is empty (hint: write text "
     "after 'repo:')", "gitops-repo.yaml:8:8:"),
    # a value of the wrong kind: pydantic's words until 2026-11-29 ("spec.repo: Input should be a valid string, got
    # 5", "spec.after: Input should be a valid list, got 'dev'"); now what it is, what the field takes, and how to
    # write it, quoting a number as the file writes it (1.10 is the number 1.1: "1.1" would be another branch)
    ("gitops-repo-a-number", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "repo: https://example.invalid/gitops", "repo: 5")}, "GitOpsRepo dev: spec.repo is a number, not text (hint: "
     'quote it if it is meant as text: repo: "5")', "gitops-repo.yaml:8:9:"),
    ("gitops-branch-a-version", {}, {"gitops-repo.yaml": GITOPS.format(extra="").replace(
        "branch: dev", "branch: 1.10")}, "GitOpsRepo dev: spec.branch is a number, not text (hint: quote it if it is "
     'meant as text: branch: "1.10")', "gitops-repo.yaml:6:11:"),
    ("environment-after-text", {".environments/dev.yaml": MAIN_FILES[".environments/dev.yaml"].replace(
        "after: [dev]", "after: dev")}, {}, "Environment qa: spec.after is text, not a list (hint: write a list: "
     "after: [dev])", "dev.yaml:12:10:"),
    ("environment-rollout-a-list", {".environments/dev.yaml": MAIN_FILES[".environments/dev.yaml"].replace(
        "after: [dev]", "after: [dev]\n          rollout:\n          - soakTime: 15m")}, {},
     "Environment qa: spec.rollout is a list, not a mapping (hint: write its keys on the lines below 'rollout:', "
     "indented more, without '- ')", "dev.yaml:13:3:"),
    # a union field given what none of its types takes: two messages in pydantic's words, one per type, until
    # 2026-11-28 ("spec.schema.dict[str,any]: Input should be a valid dictionary, got True" and "spec.schema.str")
    ("config-schema-true", {"schemas/s.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: ConfigSchema\nmetadata:\n"
                                              "  name: s\nspec:\n  schema: true\n"}, {},
     "ConfigSchema s: spec.schema is a boolean, not a JSON Schema (a mapping, or its JSON or YAML text) (hint: ",
     "s.yaml:6:11:"),
    # a control character: "position 776 of <unicode string>" and no line until 2026-11-28
    ("control-character", {}, {"cm.yaml": deep(1).replace("k: []", "k: a\x00b")},
     "the character U+0000 is not allowed in YAML", "cm.yaml:7:7"),
    # a value its tag does not allow: ruamel's KeyError, a traceback until 2026-11-28
    ("tagged-value-not-allowed", {}, {"cm.yaml": deep(1).replace("k: []", "k: !!bool maybe")},
     "'maybe' is not a value its tag allows", "cm.yaml"),
    ("aliases-huge-careful-path", {}, {"lol.yaml": laughs(9, "#\ttab\n")}, "(more than 100,000 added)", "lol.yaml:1:1"),
    # a JSON template rendering text that is not JSON (a value without toJson): written out, and refused by the
    # GitOps agent on every cluster, until 2026-11-28; now the assignment fails at the manifest, once per template
    ("json-template-renders-no-json", {"templates/config.yaml": JSON_CONFIG}, {},
     "renders text that is not JSON (contentType: json): Expecting value at line 1 of what it renders (and the "
     "same in 1 more assignment: edge-line1/app-dev)", "config.yaml:10:"),
    # the same for YAML: a value written into a flow sequence; refused by the agent on every cluster until 2026-11-29
    ("yaml-template-renders-no-yaml", {"templates/flux.yaml": TPL.format(body="[{{ DeploymentTargetName }}")}, {},
     "renders text that is not YAML (contentType: yaml): did not find expected ',' or ']' at line 3 of what it "
     "renders (while parsing a flow sequence at line 2) (and the same in 1 more assignment: edge-line1/app-dev)",
     "flux.yaml:9: "),
    # a contentType in capitals: platform-config.YAML was written, and Flux and Argo CD, which read only lowercase
    # .yaml/.yml (and .json) files, passed over it without a word, until 2026-11-29 (fluxcd/pkg
    # kustomize/kustomize_generator.go scanManifests; argo-cd reposerver/repository/repository.go manifestFile)
    ("content-type-in-capitals", {"templates/config.yaml": MAIN_FILES["templates/config.yaml"].replace(
        "type: config\n", "type: config\n          contentType: YAML\n")}, {},
     "Template config: spec.contentType: YAML names files that Flux and Argo CD pass over without a word (Flux "
     "reads the files ending in .yaml or .yml, Argo CD those ending in .yaml, .yml or .json, in lowercase only); "
     "write contentType: yaml", "config.yaml:7:16:"),
]


@pytest.mark.parametrize(
    ("main", "env", "message", "where"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.filterwarnings("error")  # a Python warning reaches the user's terminal as such: none is allowed
def test_broken_input_is_reported_and_nothing_is_written(
    tmp_path: Path, main: dict[str, str], env: dict[str, str], message: str, where: str
) -> None:
    main_dir, env_dir = make_plane(tmp_path, main, env)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("untouched")
    before = tree_bytes(out)
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    assert result.exit_code == 1, result.output
    assert message in result.output, result.output
    assert where in result.output, result.output
    assert tree_bytes(out) == before


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    main_dir, env_dir = make_plane(
        tmp_path,
        {},
        {
            "a.yaml": "x: [\n",
            "ct.yaml": ct("x", "reconciler: nope\n  namespaceService: namespace\n  configType: config"),
            "cl.yaml": "apiVersion: fleetflow.dev/v1alpha1\nkind: Cluster\nmetadata:\n  name: c\n"
            "spec:\n  clusterType: ghost\n",
        },
    )
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1
    assert "invalid YAML" in result.output
    # structural problems of one file do not hide those of others
    assert "a.yaml:" in result.output


def test_json_format_lists_problems(tmp_path: Path) -> None:
    import json

    main_dir, env_dir = make_plane(tmp_path, {}, {"ct.yaml": ct("Bad_Name")})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["ok"] is False
    assert data["problems"][0]["location"]["file"].endswith("ct.yaml")
    assert data["problems"][0]["location"]["line"] == 4


def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    """Exit 2 since 2026-11-29 (it was 1, while a file given for the folder was 2): the command line names nothing,
    the control plane is not at fault. Every path option alike: tests/test_cli_contract.py."""
    result = run_cli(
        "validate", "--main", tmp_path / "nope", "--env", tmp_path / "nope2", "--environment", "dev"
    )
    assert result.exit_code == 2
    assert f"usage error: --main {tmp_path / 'nope'} does not exist (hint: check the path" in result.output


def test_usage_error_exits_2(tmp_path: Path) -> None:
    result = run_cli("render", "--main", tmp_path)
    assert result.exit_code == 2


@pytest.mark.parametrize("inside", ["env", "env/out", "main/deep/out"])
def test_an_output_inside_the_control_plane_is_refused(tmp_path: Path, inside: str) -> None:
    """``--output`` in (or at) ``--main`` or ``--env`` wrote the manifests into the control plane: every later read
    of it failed with dozens of unknown kinds (a bad-input hunt, 2026-11-28). Now a usage error, nothing written."""
    main_dir, env_dir = make_plane(tmp_path)
    before = tree_bytes(tmp_path)
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev",
                     "--output", tmp_path / inside)
    assert result.exit_code == 2, result.output
    assert f"is inside --{inside.split('/')[0]} " in result.output and "give a folder outside it" in result.output
    assert tree_bytes(tmp_path) == before


@pytest.mark.parametrize("command", ["render", "plan"])
def test_an_output_holding_another_environments_render_is_refused(tmp_path: Path, command: str) -> None:
    """``--output`` holding dev's render, given to a render of qa: qa's render took dev's state as its own and
    deleted dev's files as no longer rendered (until 2026-11-29). Now a usage error naming both, nothing written;
    the same output rendered for dev again is fine."""
    main_dir, env_dir = make_plane(tmp_path / "dev")
    out = tmp_path / "out"
    assert run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out,
                   ).exit_code == 0
    qa_gitops = ENV_FILES["gitops-repo.yaml"].replace("name: dev", "name: qa").replace("branch: dev", "branch: qa")
    qa_main, qa_env = make_plane(tmp_path / "qa", env={"gitops-repo.yaml": qa_gitops})
    before = tree_bytes(out)
    result = run_cli(command, "--main", qa_main, "--env", qa_env, "--environment", "qa", "--output", out)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        f"usage error: --output {out} holds environment dev's render (its state names dev), not qa's: rendering qa "
        "there would replace dev's files (hint: give each environment its own --output folder"), result.output
    assert tree_bytes(out) == before
    assert run_cli(command, "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out,
                   ).exit_code == 0
    # the render of an environment main no longer defines (renamed): taken over
    state = out / ".fleetflow" / "state.json"
    assert state.read_text().count('"environment": "dev"') == 1
    state.write_text(state.read_text().replace('"environment": "dev"', '"environment": "staging"'))
    result = run_cli(command, "--main", qa_main, "--env", qa_env, "--environment", "qa", "--output", out)
    assert result.exit_code == 0, result.output


PRIORITY_CM = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    platform-config: 'true'\n"
               "  annotations:\n    fleetflow.dev/priority: \"{value}\"\ndata: {{}}\n")


NOT_AN_ATOI_INTEGER = "must be an integer (digits 0-9, optionally after '-' or '+'), not {value!r} (hint: write e.g."


@pytest.mark.parametrize(("value", "message"), [
    (" 10", NOT_AN_ATOI_INTEGER),
    ("10 ", NOT_AN_ATOI_INTEGER),
    ("1_0", NOT_AN_ATOI_INTEGER),
    ("\u0661\u0660", NOT_AN_ATOI_INTEGER),  # Arabic-Indic digits: int() reads them as 10
    ("\uff11\uff10", NOT_AN_ATOI_INTEGER),  # fullwidth digits
    ("9223372036854775808", "{value} is out of range (hint: give an integer from -9223372036854775808 to "
                            "9223372036854775807)"),
    # past Python's 4,300 digits for int(): a ValueError and a traceback until 2026-11-29
    ("9" * 5000, "{value} is out of range"),
])
def test_a_priority_go_would_not_read_is_refused_at_its_line(tmp_path: Path, value: str, message: str) -> None:
    """The priority annotation is an integer (docs/design.md, "Precedence") written as Go's ``strconv.Atoi`` reads
    one: an optional '+' or '-', then the digits 0-9, within a 64-bit int ("Atoi is equivalent to ParseInt(s, 10,
    0)", src/strconv/atoi.go of golang/go; no "_" in base 10, no space). Python's ``int()`` also took spaces around
    it, "_" between digits and any Unicode digits, and any size, until 2026-11-28: a Go tool would read another
    priority, or none."""
    main_dir, env_dir = make_plane(tmp_path, {}, {"cm.yaml": PRIORITY_CM.format(value=value)})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 1, result.output
    said = message.format(value=value)
    assert f"cm.yaml:8:29: ConfigMap c: annotation fleetflow.dev/priority {said}" in result.output, result.output


@pytest.mark.parametrize("value", ["+10", "010", "-5", "-9223372036854775808", "-" + "0" * 5000 + "7"])
def test_a_priority_go_reads_is_taken(tmp_path: Path, value: str) -> None:
    """What ``strconv.Atoi`` reads, fleetflow takes: a '+' sign and leading zeros too (a guard: these passed before
    the check above was made strict)."""
    main_dir, env_dir = make_plane(tmp_path, {}, {"cm.yaml": PRIORITY_CM.format(value=value)})
    result = run_cli("validate", "--main", main_dir, "--env", env_dir, "--environment", "dev")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("command", "option"), [("render", "--output"), ("plan", "--output"),
                                                 ("validate", "--main"), ("explain", "--env")])
def test_an_empty_folder_option_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, option: str
) -> None:
    """An empty path is the current folder to Python: ``--output ''`` rendered into it, ``--main ''`` read it (136
    problems from the folder above the example), without a word until 2026-11-28. Run from a folder of its own:
    the code before rendered into the current folder, and once into a checkout of this repository."""
    main_dir, env_dir = make_plane(tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    args = {"--main": str(main_dir), "--env": str(env_dir)}
    if command in ("render", "plan"):
        args["--output"] = str(tmp_path / "out")
    args[option] = ""
    extra = ["--environment", "dev"] if command != "validate" else []
    if command == "explain":
        extra += ["--assignment", "cloud-eu/app-dev"]
    result = run_cli(command, *[x for kv in args.items() for x in kv], *extra)
    assert result.exit_code == 2, result.output
    assert f"usage error: {option} is empty (hint: give a folder ('.' for the current one))" in result.output
    assert not (tmp_path / "out").exists() and not any(here.iterdir())


ENDLESS_CONFIG = """
    apiVersion: fleetflow.dev/v1alpha1
    kind: Template
    metadata:
      name: config
    spec:
      type: config
      contentType: yaml
      manifests:
        - |
          kind: ConfigMap
          {% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}
"""


def test_a_template_that_renders_for_too_long_fails_its_assignment(tmp_path: Path) -> None:
    """Two nested ``range(100000)`` loops that render nothing: Jinja's sandbox bounds a range to 100,000 items
    (``jinja2.sandbox.MAX_RANGE``, https://jinja.palletsprojects.com/en/stable/sandbox/) and fleetflow bounds the
    output, not the time, so ``render`` ran for hours (10 billion steps) and so did every job that rendered, the
    pull-request check too, until 2026-11-28. Now the template is stopped after ``RENDER_SECONDS`` (10 s), its
    assignments fail at the manifest (once for the template), exit 1, nothing written. Run as the executable, in a
    process of its own: the alarm needs the main thread, and the code before this would hang the suite."""
    import os
    import subprocess
    import sys
    import time

    main_dir, env_dir = make_plane(tmp_path, {"templates/config.yaml": ENDLESS_CONFIG}, {})
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "fleetflow"), "render", "--main", str(main_dir), "--env", str(env_dir),
             "--environment", "dev", "--output", str(out)],
            capture_output=True, text=True, timeout=90, env={**os.environ, "FLEETFLOW_CACHE_DIR": str(tmp_path / "c")},
        )
    except subprocess.TimeoutExpired:
        pytest.fail("render still ran after 90 s: no time budget for a template")
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    assert "template 'config', manifest 1, rendering" in done.stderr and "still rendering after 10 s" in done.stderr
    assert "config.yaml:11:" in done.stderr, done.stderr  # the loop's line
    assert "range() inside range()" in done.stderr
    # the other assignment is not rendered again: 10 s once, not 10 s an assignment (days at 100,000)
    assert ("template 'config', rendering assignment edge-line1/app-dev: not rendered, it ran past its 10 s time "
            "budget rendering assignment cloud-eu/app-dev") in done.stderr, done.stderr
    assert not out.exists() and took < 20

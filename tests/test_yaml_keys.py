"""Keys that YAML resolves to a boolean, an integer or a float become the text Kubernetes makes of them.

The reference is ``convertToJSONableObject`` in ``yaml.go`` of github.com/kubernetes-sigs/yaml (sigs.k8s.io/yaml,
which kubectl, Flux and Argo CD use to turn YAML into JSON): a bool key becomes "true"/"false", an int
``strconv.Itoa``, a float64 ``strconv.FormatFloat(k, 'g', -1, 32)`` (the shortest text of the value as a float32)
with "+Inf", "-Inf", "NaN" written ".inf", "-.inf", ".nan"; a null key (and a uint64 one) is refused. Its own tests
(``yaml_test.go``: "float key" 1.2, "large integer key (scientific notation)" 1e+36, "string map: decode float key"
444.444) are among the cases below. fleetflow keeps its YAML 1.2 resolution (``yes`` stays text): only how a key it
resolved to a boolean or a number becomes text follows Kubernetes.

Until this change the careful path wrote ``str(key)`` (``True``, ``1.0``, ``1000.0``, ``inf``) and judged
duplicates on Python values (``true`` and ``1.0`` were one key, ``1`` and ``"1"`` two).
"""

from __future__ import annotations

import struct
from decimal import ROUND_FLOOR, Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetflow.errors import InputError, Location, Problem
from fleetflow.model.documents import ParseCache, Tree
from fleetflow.render.composition import Composer, ConfigSource, Subject
from fleetflow.render.templates import TemplateEngine, TemplateRenderError, TemplateSource
from tests.helpers import ENV_FILES, build_file_tree, make_plane, parsed, run_cli, tree_read


def _body(text: str) -> dict[str, object]:
    docs, problems = parsed(text)
    assert problems == [], [str(p) for p in problems]
    assert len(docs) == 1
    return docs[0].body


def _one_problem(text: str) -> Problem:
    docs, problems = parsed(text)
    assert docs == [] and len(problems) == 1, [str(p) for p in problems]
    return problems[0]


def test_boolean_and_integer_keys_become_kubernetes_text() -> None:
    """bool: "true"/"false" (yaml.go writes them out); int: strconv.Itoa, the decimal digits of the value fleetflow
    resolved (YAML 1.2: 0o17 is octal, 0777 decimal, underscores dropped). ``yes`` stays the text "yes". An
    anchored boolean (ruamel's ScalarBoolean, an int) is a boolean too: it was "1"."""
    body = _body(
        "m:\n"
        "  true: a\n  False: b\n  yes: c\n"
        "  8080: e\n  0x10: f\n  0o17: g\n  0b101: h\n  1_000: i\n  -42: j\n  +7: k\n  0777: l\n"
        "  9223372036854775807: n\n  -9223372036854775808: o\n  !!int \"12\": p\n"
        "anchored:\n  &t TRUE: d\nagain:\n  *t : e\n"
    )
    assert body == {
        "m": {
            "true": "a", "false": "b", "yes": "c",
            "8080": "e", "16": "f", "15": "g", "5": "h", "1000": "i", "-42": "j", "7": "k", "777": "l",
            "9223372036854775807": "n", "-9223372036854775808": "o", "12": "p",
        },
        "anchored": {"true": "d"},
        "again": {"true": "e"},
    }


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("1.0", "1"),
        ("1e3", "1000"),
        ("1.5e3", "1500"),
        ("-2.50", "-2.5"),
        ("0.1", "0.1"),  # float32(0.1) is 0.100000001...: its shortest text is still 0.1
        ("3.3", "3.3"),  # yaml_test.go "float key"
        ("444.444", "444.444"),  # yaml_test.go "string map: decode float key"
        ("1e+36", "1e+36"),  # yaml_test.go "large integer key (scientific notation)"
        ("1e21", "1e+21"),
        ("123456.0", "123456"),
        ("1e6", "1e+06"),  # %g with the shortest precision takes the exponent form from 10^6 on
        ("1234567.0", "1.234567e+06"),
        ("0.0001", "0.0001"),
        ("0.00001", "1e-05"),  # and below 10^-4
        ("1.5e-7", "1.5e-07"),
        ("3.14159265358979", "3.1415927"),  # bitSize 32: the float32's shortest digits, not the float64's
        ("16777217.0", "1.6777216e+07"),  # 2^24 + 1 is no float32: the nearest one
        ("378990.875", "378990.88"),  # two shortest texts as near: the even one
        ("430737.625", "430737.62"),
        ("1.4e-45", "1e-45"),  # float32's smallest subnormal
        ("3.4028234e38", "3.4028235e+38"),  # float32's largest value
        ("1e-50", "0"),  # below float32's range: zero
        ("-0.0", "-0"),
        ("1e39", ".inf"),  # above float32's range: +Inf, which yaml.go writes .inf
        (".inf", ".inf"),
        ("+.Inf", ".inf"),
        ("-.inf", "-.inf"),
        ("-1e39", "-.inf"),
        (".nan", ".nan"),
        (".NaN", ".nan"),
        ("!!float 1", "1"),
    ],
)
def test_float_keys_become_go_float32_text(key: str, text: str) -> None:
    """float64: strconv.FormatFloat(k, 'g', -1, 32), then +Inf/-Inf/NaN as .inf/-.inf/.nan (yaml.go). Each key
    stands beside a ``true`` key, the mix that was a false duplicate for 1.0."""
    assert _body(f"m:\n  {key}: f\n  true: t\n") == {"m": {text: "f", "true": "t"}}


def test_true_and_one_point_zero_are_two_keys() -> None:
    """The reproduction of the defect: ruamel compared Python values (True == 1.0) and called them duplicates."""
    assert _body("a:\n  true: x\n  1.0: y\n") == {"a": {"true": "x", "1": "y"}}


@pytest.mark.parametrize(
    ("text", "where", "spellings", "key"),
    [
        ("a:\n  1: x\n  1.0: y\n", "f.yaml:3:3", "1 (line 2) and 1.0", "1"),
        ("a:\n  1.0: x\n  1: y\n", "f.yaml:3:3", "1.0 (line 2) and 1", "1"),
        ("a:\n  1: x\n  \"1\": y\n", "f.yaml:3:3", '1 (line 2) and "1"', "1"),
        ("a:\n  x: 0\n  true: x\n  'true': y\n", "f.yaml:4:3", "true (line 3) and 'true'", "true"),
        ("a: {1e3: x, 1000: y}\n", "f.yaml:1:13", "1e3 (line 1) and 1000", "1000"),
        ("a:\n  0x10: x\n  16: y\n", "f.yaml:3:3", "0x10 (line 2) and 16", "16"),
        ("a:\n  .inf: x\n  1e39: y\n", "f.yaml:3:3", ".inf (line 2) and 1e39", ".inf"),
        ("a:\n  1.00000001: x\n  1: y\n", "f.yaml:3:3", "1.00000001 (line 2) and 1", "1"),  # one float32
        ("a:\n  !!str 1: x\n  1: y\n", "f.yaml:3:3", "!!str 1 (line 2) and 1", "1"),
        ("a:\n  2024-01-01: x\n  \"2024-01-01\": y\n", "f.yaml:3:3", '2024-01-01 (line 2) and "2024-01-01"',
         "2024-01-01"),
    ],
)
def test_keys_that_become_the_same_text_are_duplicates(text: str, where: str, spellings: str, key: str) -> None:
    """Duplicates are judged on the text every later step (and Kubernetes) gets, at the repeated key; the message
    names both spellings (Kubernetes would keep one of the two values, in Go's map order: at random)."""
    problem = _one_problem(text)
    assert str(problem.location) == where
    assert problem.message == f'invalid YAML: duplicate key: {spellings} both become the key "{key}"'
    assert problem.hint is not None and "each key may appear once per mapping" in problem.hint


def test_a_duplicate_written_the_same_way_keeps_its_message() -> None:
    problem = _one_problem("a:\n  1.0: x\n  1.0: y\n")
    assert str(problem.location) == "f.yaml:3:3"
    assert problem.message == 'invalid YAML: found duplicate key "1" with value "y" (original value: "x")'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("a:\n  null: x\n", "f.yaml:2:3"),
        ("a:\n  b: 1\n  ~: x\n", "f.yaml:3:3"),
        ("a:\n  Null: x\n", "f.yaml:2:3"),
        ("a: {b: 1, : x}\n", "f.yaml:1:12"),  # an empty key: ruamel places it at its ':'
        ("a:\n  - b: 1\n    NULL: x\n", "f.yaml:3:5"),
    ],
)
def test_a_null_key_is_refused_at_its_place(text: str, where: str) -> None:
    """yaml.go refuses a key it cannot turn into text ("unsupported map key of type: <nil>"): one problem."""
    problem = _one_problem(text)
    assert str(problem.location) == where
    assert problem.message.startswith("invalid YAML: a key that is null")
    assert problem.hint is not None and '"null"' in problem.hint


@pytest.mark.parametrize("key", ["9223372036854775808", "18446744073709551615", "-9223372036854775809"])
def test_an_integer_key_outside_int64_is_refused(key: str) -> None:
    """go-yaml gives a uint64 above 2^63-1, which yaml.go refuses, and a float past 2^64 (a different key):
    fleetflow refuses both, with the quoted key as the fix."""
    problem = _one_problem(f"a:\n  b: 1\n  {key}: x\n")
    assert str(problem.location) == "f.yaml:3:3"
    assert key in problem.message and problem.hint is not None and f'"{key}"' in problem.hint


def test_a_mapping_in_a_list_and_where_its_keys_stand() -> None:
    docs, problems = parsed("items:\n  - name: a\n    true: x\n    1.0: y\n  - 8080: z\n")
    assert problems == []
    assert docs[0].body == {"items": [{"name": "a", "true": "x", "1": "y"}, {"8080": "z"}]}
    assert str(docs[0].where("items", 0, "1")) == "f.yaml:4:10"
    assert str(docs[0].where("items", 1, "8080")) == "f.yaml:5:11"


def test_positions_of_a_cached_file_name_the_converted_keys(tmp_path: Path) -> None:
    """A file read from the parse cache has its positions worked out when asked, by libyaml where it can: a key
    that is a number would stand there under its spelling ("1.0"), so such a file's positions come from ruamel."""
    root = build_file_tree(tmp_path / "t", {"cm.yaml": "kind: ConfigMap\ndata:\n  1.0: one\n  true: yes\n"})
    cache = ParseCache(tmp_path / "cache")
    first, problems = tree_read(Tree(root, "t"), cache)
    assert problems == [] and first[0].body["data"] == {"1": "one", "true": "yes"}
    again, _ = tree_read(Tree(root, "t"), cache)  # from the cache: positions on demand
    assert again[0].body == first[0].body
    assert str(again[0].where("data", "1")) == "t/cm.yaml:3:8"
    assert {k: str(v) for k, v in again[0].key_locations("data").items()} == {
        ("1",): "t/cm.yaml:3:3", ("true",): "t/cm.yaml:4:3"}


def _significant_digits(text: str) -> int:
    """How many significant digits Go's %g text holds ("1.2345679e+08": 8, "100000": 1, "0.0001": 1)."""
    mantissa = text.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa) if "e" in text else len(mantissa.rstrip("0"))


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=1, max_value=0x7F7FFFFF))
def test_float_text_reads_back_as_the_same_float32_in_the_fewest_digits(bits: int) -> None:
    """FormatFloat with precision -1: "the smallest number of digits necessary such that ParseFloat will return f
    exactly" (strconv/ftoa.go, bitSize 32), over float32 bit patterns of the whole positive range, subnormals
    included; of the two texts with that many digits around the value, the nearer."""
    # imported here, so that the file's other tests run (and fail on their assertions) on the code before this
    from fleetflow.model.yaml_keys import float32, go_float32_text

    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    text = go_float32_text(value)
    assert float32(float(text)) == value, text
    exact = Decimal(value)

    def around(digits: int) -> list[Decimal]:
        step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
        down = (exact / step).to_integral_value(rounding=ROUND_FLOOR) * step
        return [down, down + step]

    digits = _significant_digits(text)
    if digits > 1:
        assert all(float32(float(c)) != value for c in around(digits - 1)), text
    fits = [c for c in around(digits) if float32(float(c)) == value]
    assert abs(Decimal(text) - exact) == min(abs(c - exact) for c in fits), text


def test_a_configmap_key_reaches_the_rendered_output_as_kubernetes_reads_it(tmp_path: Path) -> None:
    """End to end: a ConfigMap's ``data`` with keys that are numbers and a boolean, rendered through the config
    template (``ConfigData | stringify | toYaml``): the keys are the text kubectl would send for the same YAML."""
    configs = ENV_FILES["configs.yaml"].replace(
        'REPLICAS: "1"\n', 'REPLICAS: "1"\n          8080: http\n          1.0: one\n          true: "yes"\n', 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    out = tmp_path / "out"
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    assert result.exit_code == 0, result.output
    rendered = (out / "cloud-eu" / "app-dev" / "platform-config.yaml").read_text()
    assert '  "8080": http\n' in rendered and '  "1": one\n' in rendered and '  "true": "yes"\n' in rendered


def test_a_null_key_in_a_configmap_stops_the_render_at_its_line(tmp_path: Path) -> None:
    configs = ENV_FILES["configs.yaml"].replace('REPLICAS: "1"\n', 'REPLICAS: "1"\n          ~: nothing\n', 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev",
                     "--output", tmp_path / "out")
    assert result.exit_code == 1
    assert "configs.yaml:10:3: invalid YAML: a key that is null" in result.output, result.output
    assert "Traceback" not in result.output


def test_timestamps_binary_and_sets_reach_the_output_as_written_not_as_python_reprs(tmp_path: Path) -> None:
    """A ConfigMap's values through the config template: a date-time stays the text it is written as (go-yaml v2
    leaves a timestamp read into an ``interface{}`` a string, ``decode.go``: "for backward compatibility reasons we
    set it as a string"; the quick path already kept a date so), also inside a value holding YAML (Kalypso's
    parse), and so does one that is no date (``2024-02-30``, an error until now; go-yaml leaves it text);
    ``!!binary`` is its decoded text; ``!!set`` the mapping of nulls YAML defines it as. They were
    ``"2024-01-01T10:00:00+00:00"``, ``b'hello'`` and ``set(odict_keys(['a', 'b']))`` (a bad-input hunt,
    2026-11-28)."""
    configs = ENV_FILES["configs.yaml"].replace('REPLICAS: "1"\n', (
        'REPLICAS: "1"\n'
        "          WINDOW_START: 2024-01-01T10:00:00Z\n"
        "          OFFSET: 2024-1-1t1:00:00.50-02:00\n"
        "          DAY: 2024-01-01\n"
        "          NO_DAY: 2024-02-30\n"
        "          CERT: !!binary aGVsbG8=\n"
        "          FLAGS: !!set {a, b}\n"
        "          NESTED: '{when: 2024-01-01T10:00:00Z}'\n"), 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    out = tmp_path / "out"
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    assert result.exit_code == 0, result.output
    rendered = (out / "cloud-eu" / "app-dev" / "platform-config.yaml").read_text()
    for line in ('  WINDOW_START: "2024-01-01T10:00:00Z"\n', '  OFFSET: "2024-1-1t1:00:00.50-02:00"\n',
                 '  DAY: "2024-01-01"\n', '  NO_DAY: "2024-02-30"\n', "  CERT: hello\n",
                 '  FLAGS: "{\\"a\\":null,\\"b\\":null}"\n',
                 '  NESTED: "{\\"when\\":\\"2024-01-01T10:00:00Z\\"}"\n'):
        assert line in rendered, rendered


# --- YAML held in a value: a ConfigMap string that holds a map, and fromYaml ----------------------------------


_SUBJECT = Subject("dev", "edge", {}, "shop-web", {}, "shop")


def _composed_value(text: str) -> object:
    """The value of ``FLAGS`` (a ConfigMap string holding ``text``) as composition gives it to templates."""
    data = Composer([ConfigSource("flags", Location("configs.yaml", 1), {}, 0, {"FLAGS": text},
                                  {("FLAGS",): Location("configs.yaml", 9)})]).compose(_SUBJECT).values
    return data["FLAGS"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1.0: a\n0x10: b\n1e6: c\n.inf: d\n", {"1": "a", "16": "b", "1e+06": "c", ".inf": "d"}),
        ("newCheckout: true\ntrue: false\n1.0: true\n", {"newCheckout": True, "true": False, "1": True}),
        ("{False: x, -0.0: y, 2024-01-01: z}", {"false": "x", "-0": "y", "2024-01-01": "z"}),
        ("base: &b {1.0: x}\nmerged:\n  <<: *b\n  2.50: y\n", {"base": {"1": "x"}, "merged": {"1": "x", "2.5": "y"}}),
        ("? !!binary aGVsbG8=\n: x\ncert: !!binary aGVsbG8=\n", {"hello": "x", "cert": "hello"}),
        ("- {1.0: a}\n- {true: b}\n", [{"1": "a"}, {"true": "b"}]),
    ],
)
def test_a_configmap_string_holding_yaml_has_the_keys_a_document_has(text: str, value: object) -> None:
    """A ConfigMap value written as a string that holds a map (the example's FEATURE_FLAGS) is parsed and merged as
    one; its keys follow the documents' rule (sigs.k8s.io/yaml ``convertToJSONableObject``), merged ones too. They
    were Python's text (``1.0``, ``inf``, ``False``, ``b'hello'``), and ``true:`` beside ``1.0:`` was a duplicate
    (Python's ``True == 1.0``), which left the whole value a string: the example's schema then refused
    FEATURE_FLAGS as "not of type 'object'" (a review finding, 2026-11-29)."""
    assert _composed_value(text) == value


@pytest.mark.parametrize(
    ("text", "what", "where"),
    [
        ("a: 1\n~: x\n", "a key that is null", "(line 2, column 1 of the value)"),
        ("a:\n  null: x\n", "a key that is null", "(line 2, column 3 of the value)"),
        ("9223372036854775808: x\n", "the number 9223372036854775808 is too large for a key",
         "(line 1, column 1 of the value)"),
        ("? !!binary /w==\n: x\n", "a !!binary key whose bytes are not UTF-8 text", "(line 1, column 3 of the value)"),
        ("? [a, b]\n: x\n", "a key that is a list or a mapping", "(line 1, column 3 of the value)"),
        ("a: &k ~\nb:\n  *k : x\n", "a key that is null", "(line 3, column 3 of the value)"),  # at the alias
    ],
)
def test_a_configmap_string_holding_a_key_kubernetes_refuses_stops_at_the_configmap(
        text: str, what: str, where: str) -> None:
    """What a document may not hold as a key, a ConfigMap string holding YAML may not either: one problem at the
    data key, naming the ConfigMap, the key and the line of the value (it was the key "None", "('a', 'b')", or the
    number as text)."""
    with pytest.raises(InputError) as caught:
        _composed_value(text)
    [problem] = caught.value.problems()
    assert str(problem.location) == "configs.yaml:9"
    assert problem.message.startswith(f"ConfigMap flags, data key FLAGS (a string holding YAML): {what}")
    assert problem.message.endswith(where) and problem.hint


def test_a_null_key_in_a_configmap_string_stops_the_render_at_the_configmap(tmp_path: Path) -> None:
    configs = ENV_FILES["configs.yaml"].replace(
        'REPLICAS: "1"\n', 'REPLICAS: "1"\n          FLAGS: |\n            on: true\n            ~: false\n', 1)
    main_dir, env_dir = make_plane(tmp_path, env={"configs.yaml": configs})
    out = tmp_path / "out"
    result = run_cli("render", "--main", main_dir, "--env", env_dir, "--environment", "dev", "--output", out)
    assert result.exit_code == 1, result.output
    assert ("configs.yaml:10:3: cloud-eu/app-dev: ConfigMap env-wide, data key FLAGS (a string holding YAML): a key "
            "that is null (null, ~ or nothing before ':'): Kubernetes refuses it (line 2, column 1 of the value) (and "
            "the same in 1 more assignment: edge-line1/app-dev)") in result.output
    assert "Traceback" not in result.output and not out.exists()


def _from_yaml(text: str) -> str:
    """``fromYaml`` of ``text`` in a template, the result as JSON."""
    engine = TemplateEngine()
    source = TemplateSource("tpl", "config", "json", ("{{ Manifests.text | fromYaml | toJson }}",),
                            Location("tpl.yaml", 1), (Location("tpl.yaml", 10),))
    rendered = engine.compile(source).render({"Manifests": {"text": text}}, "assignment a/b")
    assert rendered is not None
    return rendered.decode()


def test_from_yaml_gives_the_keys_a_document_has() -> None:
    """Helm's ``fromYaml`` is ``yaml.Unmarshal`` of sigs.k8s.io/yaml into a ``map[string]any`` (helm/helm
    ``pkg/engine/funcs.go``, ``fromYAML``, read at commit e9b85e4): keys as ``convertToJSONableObject`` makes them,
    the rule of the documents. ``true:`` beside ``1.0:`` was a duplicate (DuplicateKeyError), ``0x10:`` the number
    16, ``!!binary`` bytes, a date-time a Python datetime."""
    assert _from_yaml("true: a\n1.0: b\n0x10: c\n? !!binary aGVsbG8=\n: d\nat: 2024-01-01T10:00:00Z\n") == (
        '{"1":"b","16":"c","at":"2024-01-01T10:00:00Z","hello":"d","true":"a"}\n')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\n~: x\n", "fromYaml: in its text, a key that is null (null, ~ or nothing before ':'): Kubernetes "
                         "refuses it (line 2, column 1 of its text)"),
        ("1: a\n1.0: b\n", 'fromYaml: in its text, duplicate key: 1 (line 1) and 1.0 both become the key "1" '
                           "(line 2, column 1 of its text)"),
        ("a: [b\n", "fromYaml: its text is not YAML: expected ',' or ']', but got '<stream end>' (line 2, column 1 "
                    "of its text)"),
    ],
)
def test_from_yaml_refuses_what_a_document_may_not_hold_in_plain_words(text: str, message: str) -> None:
    """A template problem at the template line, worded for the user: it was "DuplicateKeyError: while constructing
    a mapping in "<unicode string>" ..." or a key "None"."""
    with pytest.raises(TemplateRenderError) as caught:
        _from_yaml(text)
    problem = caught.value.problem
    assert problem.message == f"template 'tpl', manifest 1, rendering assignment a/b: {message}"
    assert str(problem.location) == "tpl.yaml:10" and problem.hint


# --- keys written as aliases, !!binary keys ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("x: &k A\ndata:\n  A: 1\n  B: 2\n  *k : 3\n", "f.yaml:5:3",
         'duplicate key: A (line 3) and *k (the alias of &k on line 1) both become the key "A"'),
        ("x: &k 1.0\ndata:\n  *k : 1\n  B: 2\n  1: 3\n", "f.yaml:5:3",
         'duplicate key: *k (line 3, the alias of &k on line 1) and 1 both become the key "1"'),
        ("x: &k A\ndata: {A: 1, *k : 3}\n", "f.yaml:2:14",
         'duplicate key: A (line 2) and *k (the alias of &k on line 1) both become the key "A"'),
        ("x: &k A\ndata:\n  *k : 1\n  B: 2\n  *k : 3\n", "f.yaml:5:3",
         'found duplicate key "A" with value "3" (original value: "1")'),
        ("x: &k ~\ndata:\n  B: 2\n  *k : 3\n", "f.yaml:4:3",
         "a key that is null (null, ~ or nothing before ':'): Kubernetes refuses it"),
    ],
)
def test_a_key_written_as_an_alias_is_placed_where_the_alias_is(text: str, where: str, message: str) -> None:
    """ruamel's composer gives an alias the anchored node itself, so a duplicate (or null) key written as ``*k``
    was reported at the anchor (``f.yaml:1:4``), lines away from the mapping that holds it (a review finding,
    2026-11-29). The message names the anchor when the key is an alias."""
    problem = _one_problem(text)
    assert str(problem.location) == where
    assert problem.message == f"invalid YAML: {message}"


def test_a_key_written_as_an_alias_stands_where_the_alias_is() -> None:
    """Its position (messages, ``explain``) is the alias's, on the quick path's documents too."""
    docs, problems = parsed("kind: ConfigMap\nx: &k A\ndata:\n  B: 2\n  *k : 3\n")
    assert problems == [] and docs[0].body["data"] == {"B": 2, "A": 3}
    assert str(docs[0].where("data", "A")) == "f.yaml:5:8"
    assert {k: str(v) for k, v in docs[0].key_locations("data").items()} == {
        ("B",): "f.yaml:4:3", ("A",): "f.yaml:5:3"}


def test_a_binary_key_is_its_decoded_text() -> None:
    """go-yaml v2 decodes a ``!!binary`` scalar to a Go string of its bytes (``decoder.scalar`` in decode.go,
    yaml/go-yaml v2.4.2), which sigs.k8s.io/yaml keeps as the key: the text, as a ``!!binary`` value already was.
    It was the key "b'hello'"; beside a key ``hello`` it is a duplicate."""
    assert _body("data:\n  ? !!binary aGVsbG8=\n  : x\n") == {"data": {"hello": "x"}}
    problem = _one_problem("data:\n  hello: y\n  ? !!binary aGVsbG8=\n  : x\n")
    assert str(problem.location) == "f.yaml:3:5"
    assert problem.message == ('invalid YAML: duplicate key: hello (line 2) and !!binary aGVsbG8= both become the '
                               'key "hello"')


def test_a_binary_key_that_is_not_utf8_is_refused() -> None:
    """Bytes that are no UTF-8 text: encoding/json (json.Marshal, the last step of sigs.k8s.io/yaml) writes U+FFFD
    for each invalid byte, another key and a lossy one; fleetflow refuses it at the key (it was "b'\\\\xff'")."""
    problem = _one_problem("data:\n  ok: 1\n  ? !!binary /w==\n  : x\n")
    assert str(problem.location) == "f.yaml:3:5"
    assert problem.message.startswith("invalid YAML: a !!binary key whose bytes are not UTF-8 text")
    assert problem.hint is not None and "binaryData" in problem.hint

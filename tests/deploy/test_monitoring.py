"""deploy/monitoring: the Grafana dashboard, the Prometheus rules and their
promtool unit tests, checked against a real daemon.

- `promtool check rules` and `promtool test rules` pass (promtool from PATH,
  or from tools/deps-promtool.sh, which tools/test-deploy.sh runs);
- every alert has a case in the unit tests where it fires and one where it
  must not, a severity, a summary, a description and a one-line runbook
  whose README section exists;
- every PromQL expression of the dashboard, its variables, the rules and the
  unit tests' input series names only metrics, labels and label values that
  a running holdfastd (redis-server + PostgreSQL + holdfastd, after a few
  real calls) exposes on GET /metrics, or recording rules of the rules file,
  or Prometheus' own `up`;
- the dashboard's queries parse (promtool, with Grafana's variables
  substituted), filter on $job and $instance, and use the $datasource
  variable; the memory alert's limit is the Kubernetes example's.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import pytest
import yaml

from deploy_helpers import DEPLOY, REPO, build_dir

sys.path.insert(0, str(REPO / "tests"))
import harness  # noqa: E402
import pgharness as pgh  # noqa: E402

MON = DEPLOY / "monitoring"
DASHBOARD = MON / "grafana" / "holdfast.json"
PROVISIONING = MON / "grafana" / "provisioning"
RULES = MON / "prometheus" / "holdfast-alerts.yml"
RULE_TESTS = MON / "prometheus" / "holdfast-alerts.test.yml"
README = MON / "README.md"
PROMTOOL = REPO / "build" / "deps" / "promtool" / "usr" / "bin" / "promtool"

# Series Prometheus itself adds for every target (not the daemon's).
PROMETHEUS_SERIES = {"up": {"job", "instance"}}
# Labels Prometheus attaches to every scraped series.
TARGET_LABELS = {"job", "instance"}
# Labels whose values change from build to build (not checked).
BUILD_LABELS = {"version", "library"}
# What the dashboard's Grafana variables stand for when the queries are
# handed to promtool.
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
                "$job": ".+", "$instance": ".+", "$op": ".+"}
# The alerts the issue asks for (others may exist).
REQUIRED_ALERTS = {"HoldfastNotReady", "HoldfastRedisDownFailClosed", "HoldfastConfirmUnavailable",
                   "HoldfastConfirmInDoubt", "HoldfastConfirmHoldLost", "HoldfastMemoryNearLimit"}
REQUIRED_ROWS = {"Traffic", "Latency", "Backends", "Waiting & sessions", "Confirms",
                 "Client protection", "Process"}


# ---------------------------------------------------------------- helpers

def promtool_path():
    p = shutil.which("promtool") or (str(PROMTOOL) if os.access(PROMTOOL, os.X_OK) else None)
    if not p:
        pytest.fail("promtool is missing: run tools/deps-promtool.sh (tools/test-deploy.sh does)")
    return p


def rules_doc():
    return yaml.safe_load(RULES.read_text())


def all_rules():
    return [r for g in rules_doc()["groups"] for r in g["rules"]]


def alerts():
    return {r["alert"]: r for r in all_rules() if "alert" in r}


def recorded():
    """{recording rule name: its expression}"""
    return {r["record"]: r["expr"] for r in all_rules() if "record" in r}


def dashboard():
    return json.loads(DASHBOARD.read_text())


def dashboard_panels():
    out = []
    for p in dashboard()["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows keep theirs inside
    return out


def dashboard_exprs():
    """[(where, expr)] of every panel target."""
    return [("panel %r %s" % (p["title"], t["refId"]), t["expr"])
            for p in dashboard_panels() for t in p.get("targets", []) if "expr" in t]


def variable_queries():
    """[(where, query)] of the dashboard's query variables."""
    out = []
    for v in dashboard()["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append(("variable %s" % v["name"], q))
    return out


def grafana_substituted(expr):
    for var in sorted(GRAFANA_VARS, key=len, reverse=True):
        expr = expr.replace(var, GRAFANA_VARS[var])
    assert "$" not in expr, "unknown Grafana variable in %r" % expr
    return expr


def anchor(heading):
    """GitHub's anchor for a Markdown heading."""
    a = heading.strip().lower()
    a = re.sub(r"[^\w\- ]", "", a)
    return a.replace(" ", "-")


def readme_anchors():
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", README.read_text(), re.M)}


# ------------------------------------------------- a PromQL reader (enough)

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min",
    "day_of_month", "day_of_week", "day_of_year", "days_in_month", "delta", "deriv", "exp",
    "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
    "label_join", "label_replace", "ln", "log2", "log10", "minute", "month", "predict_linear",
    "rate", "resets", "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "time",
    "timestamp", "vector", "year", "avg_over_time", "min_over_time", "max_over_time",
    "sum_over_time", "count_over_time", "quantile_over_time", "stddev_over_time",
    "stdvar_over_time", "last_over_time", "present_over_time",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile"}
KEYWORDS = {"and", "or", "unless", "offset", "bool", "atan2", "inf", "nan"}
GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<dur>\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*\b)
  | (?P<num>0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<var>\$\{?\w+\}?)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@])
""", re.X)


def tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            raise ValueError("cannot read %r at %r" % (expr, expr[pos:pos + 20]))
        pos = m.end()
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group()))
    return out


def unquote(s):
    return s[1:-1] if s[0] == "`" else json.loads(s) if s[0] == '"' else s[1:-1]


def read_promql(expr):
    """(selectors, grouping labels, problems) of one expression: selectors
    are (metric name, [(label, op, value)]); grouping labels are those named
    in by/without/on/ignoring/group_left/group_right."""
    toks = tokens(expr)
    selectors, grouping, problems = [], set(), []
    i = 0
    depth_sq = 0

    def matchers(j):
        """Read label matchers from just after '{'; return (list, index after '}')."""
        out = []
        while toks[j][1] != "}":
            (k1, label), (k2, op), (k3, value) = toks[j], toks[j + 1], toks[j + 2]
            if k1 != "ident" or op not in ("=", "!=", "=~", "!~") or k3 != "str":
                raise ValueError("bad matcher in %r" % expr)
            out.append((label, op, unquote(value)))
            j += 3
            if toks[j][1] == ",":
                j += 1
        return out, j + 1

    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if text == "[":
            depth_sq += 1
        elif text == "]":
            depth_sq -= 1
        elif depth_sq:
            pass  # durations, subquery steps
        elif kind == "ident" and text in GROUPING:
            if nxt == "(":
                j = i + 2
                while toks[j][1] != ")":
                    if toks[j][0] == "ident":
                        grouping.add(toks[j][1])
                    j += 1
                i = j
        elif kind == "ident" and text.lower() in KEYWORDS:
            pass
        elif kind == "ident" and text in AGGREGATIONS and nxt in ("by", "without", "("):
            pass  # sum by (op) (...), sum (...) by (op)
        elif kind == "ident" and nxt == "(":
            if text not in FUNCTIONS:
                problems.append("unknown function %s()" % text)
        elif kind == "ident":
            ms = []
            if nxt == "{":
                ms, j = matchers(i + 2)
                i = j - 1
            selectors.append((text, ms))
        elif text == "{":
            ms, j = matchers(i + 1)
            names = [v for lbl, op, v in ms if lbl == "__name__" and op == "="]
            if not names:
                problems.append("a selector without a metric name: %r" % expr)
            else:
                selectors.append((names[0], [m for m in ms if m[0] != "__name__"]))
            i = j - 1
        i += 1
    return selectors, grouping, problems


class Exposition:
    """What a scrape of the daemon says: families and their types, and per
    sample name the labels and the values each takes."""

    def __init__(self, text):
        self.text = text
        self.types = {}
        self.labels = {}  # sample name -> {label: {values}}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                self.types[name] = kind
            elif line and not line.startswith("#"):
                m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$", line)
                assert m, "unreadable sample line %r" % line
                seen = self.labels.setdefault(m.group(1), {})
                for lbl, val in re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""):
                    seen.setdefault(lbl, set()).add(val)

    def family(self, name):
        """The family a series name belongs to, or None."""
        if name in self.types and self.types[name] != "histogram":
            return name
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and self.types.get(base) == "histogram":
                return base
        return None

    def all_labels(self):
        out = {}
        for per in self.labels.values():
            for lbl, vals in per.items():
                out.setdefault(lbl, set()).update(vals)
        return out


def _simple_alternatives(regex):
    """The words of a regex like 'a|b|c', or None for anything fancier."""
    if re.fullmatch(r"[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)*", regex):
        return regex.split("|")
    return None


def check_expr(expr, expo, rec, where):
    """Problems with one expression: names the daemon does not expose,
    labels its series do not carry, label values they never take."""
    try:
        selectors, grouping, problems = read_promql(expr)
    except (ValueError, IndexError) as e:
        return ["%s: %s" % (where, e)]
    problems = ["%s: %s" % (where, p) for p in problems]
    everywhere = expo.all_labels()
    if not selectors:
        problems.append("%s: no metric at all in %r" % (where, expr))
    for name, ms in selectors:
        if name in rec:
            # A recording rule: the labels its outermost `by` keeps.
            by = re.search(r"\bby\s*\(([^)]*)\)", rec[name])
            allowed = {s.strip() for s in by.group(1).split(",")} if by else set()
            values = everywhere
        elif name in PROMETHEUS_SERIES:
            allowed, values = PROMETHEUS_SERIES[name], {}
        elif expo.family(name):
            seen = expo.labels.get(name, {})
            allowed, values = set(seen) | TARGET_LABELS, seen
        else:
            problems.append("%s: metric %s is not exposed by holdfastd" % (where, name))
            continue
        for lbl, op, val in ms:
            if lbl not in allowed:
                problems.append("%s: %s has no label %s" % (where, name, lbl))
                continue
            if lbl in TARGET_LABELS | BUILD_LABELS or "$" in val or val == "" or lbl not in values:
                continue
            words = [val] if op in ("=", "!=") else _simple_alternatives(val) or []
            for w in words:
                if w not in values[lbl]:
                    problems.append("%s: %s{%s} never takes the value %r (it takes %s)"
                                    % (where, name, lbl, w, sorted(values[lbl])))
    for lbl in grouping - set(everywhere) - TARGET_LABELS - {"le"}:
        problems.append("%s: groups by %s, a label no holdfastd series has" % (where, lbl))
    return problems


def check_label_values_query(query, expo, rec, where):
    """Grafana's label_values(selector, label)."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*", query)
    if not m:
        return ["%s: not a label_values() query: %r" % (where, query)]
    selector, label = m.group(1), m.group(2)
    problems = check_expr(selector, expo, rec, where)
    for name, _ in read_promql(selector)[0]:
        if label not in TARGET_LABELS and label not in expo.labels.get(name, {}):
            problems.append("%s: %s has no label %s" % (where, name, label))
    return problems


def every_expression():
    """[(where, expr, kind)] of the dashboard, its variables, the rules and
    the unit tests' input series."""
    out = [(w, e, "promql") for w, e in dashboard_exprs()]
    out += [(w, q, "label_values") for w, q in variable_queries()]
    for r in all_rules():
        out.append(("rule %s" % (r.get("alert") or r.get("record")), r["expr"], "promql"))
    for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for s in t.get("input_series", []):
            out.append(("test %r input" % t["name"], s["series"], "promql"))
        for p in t.get("promql_expr_test", []):
            out.append(("test %r expr" % t["name"], p["expr"], "promql"))
    return out


# ------------------------------------------------------ the running stack

HTTP_ANY_PORT = 'metrics = { http = true, http_address = "127.0.0.1:0" },'
NAMESPACES = pgh.NAMESPACES + """
    ["product-modify"] = { default_ttl_ms = 5000, on_redis_down = "best_effort" },
"""


def _call_ok(resp, *codes):
    assert harness.code_name(resp.code) in (codes or ("OK",)), resp.message
    return resp


@pytest.fixture(scope="module")
def scraped(binaries):
    """The text of GET /metrics from holdfastd with Redis and PostgreSQL,
    after holds, extends, releases, statuses, a wait, a session hold and
    confirms (OK and HOLD_LOST); also the Metrics rpc's text."""
    saved = harness.HOLDFASTD, harness.HOLDFASTCTL
    harness.HOLDFASTD, harness.HOLDFASTCTL = str(binaries["holdfastd"]), str(binaries["holdfastctl"])
    work = tempfile.mkdtemp(prefix="hf-mon-", dir="/tmp")
    redis = db = daemon = None
    try:
        redis = harness.RedisServer(work).start()
        cluster = pgh.cluster()
        db = pgh.PgDatabase(cluster, cluster.new_database())
        daemon = harness.Daemon(work, redis.address, namespaces=NAMESPACES,
                                top_extra=HTTP_ANY_PORT + db.config()).start()
        pb = harness.pb()
        with harness.Client(daemon.socket) as c:
            token, _ = pgh.hold_token(c, "seat", "run-1", ["E7", "E8"], ttl_ms=30000)
            _call_ok(c.hold("seat", "run-1", ["E8"]), "HELD_BY_ANOTHER")
            _call_ok(c.extend("seat", "run-1", ["E7", "E8"], token, ttl_ms=60000))
            _call_ok(c.status("seat", "run-1", ["E7"], token=token))
            _call_ok(c.release("seat", "run-1", ["E7", "E8"], token))
            _call_ok(c.release("seat", "run-1", ["E7"], token), "NOT_HELD")
            token, _ = pgh.hold_token(c, "seat", "run-1", ["E9"])
            _call_ok(pgh.confirm(c, "seat", "run-1", ["E9"], token, "order-1:confirm",
                                 reference="order-1"))
            _call_ok(pgh.confirm(c, "seat", "run-1", ["E10"], token, "order-2:confirm"),
                     "HOLD_LOST")
            _call_ok(pgh.cancel(c, "seat", "run-1", ["E9"], "order-1:cancel", reference="order-1"))
            # A wait that times out behind a holder, and a session hold.
            token, _ = pgh.hold_token(c, "seat", "run-2", ["A1"])
            _call_ok(c.call(hold=pb.HoldRequest(namespace="seat", partition="run-2", ids=["A1"],
                                                wait_ms=50)), "HELD_BY_ANOTHER")
            _call_ok(c.call(hold=pb.HoldRequest(namespace="seat", partition="run-3", ids=["S1"],
                                                session=True)))
            _call_ok(c.hold("product-modify", "10001", ["p"]))
            socket_text = c.metrics()
        log = daemon.wait_log("metrics.http: serving")
        host, port = re.search(r"metrics\.http: serving /metrics, /healthz, /readyz on "
                               r"(\S+):(\d+)\n", log).groups()
        with urllib.request.urlopen("http://%s:%s/metrics" % (host, port), timeout=10) as r:
            assert r.status == 200
            http_text = r.read().decode()
        yield {"http": http_text, "socket": socket_text}
    finally:
        if daemon:
            daemon.stop()
        if db:
            db.close()
        if redis:
            redis.stop()
        shutil.rmtree(work, ignore_errors=True)
        harness.HOLDFASTD, harness.HOLDFASTCTL = saved


@pytest.fixture(scope="module")
def expo(scraped):
    return Exposition(scraped["http"])


# ------------------------------------------------------------- promtool

def test_promtool_check_rules():
    r = subprocess.run([promtool_path(), "check", "rules", "--lint=all", "--lint-fatal",
                        str(RULES)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout, r.stdout


def test_promtool_test_rules():
    r = subprocess.run([promtool_path(), "test", "rules", RULE_TESTS.name],
                       cwd=RULE_TESTS.parent, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout, r.stdout


def test_dashboard_queries_parse(tmp_path):
    """Every panel query is valid PromQL once Grafana's variables are
    substituted: promtool checks them as recording rules."""
    rules = [{"record": "dashboard:q%d" % i, "expr": grafana_substituted(e)}
             for i, (_, e) in enumerate(dashboard_exprs())]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    r = subprocess.run([promtool_path(), "check", "rules", str(path)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ---------------------------------------------------------------- rules

def test_the_issues_alerts_exist():
    assert REQUIRED_ALERTS <= set(alerts()), REQUIRED_ALERTS - set(alerts())


def test_every_alert_has_severity_annotations_and_a_runbook_section():
    anchors = readme_anchors()
    for name, rule in alerts().items():
        assert rule.get("labels", {}).get("severity") in ("critical", "warning"), name
        ann = rule.get("annotations", {})
        for key in ("summary", "description", "runbook"):
            assert ann.get(key, "").strip(), "%s has no %s" % (name, key)
        assert "\n" not in ann["runbook"].strip(), "%s: the runbook is one line" % name
        m = re.search(r"deploy/monitoring/README\.md#([\w-]+)", ann["runbook"])
        assert m, "%s: the runbook names no README section" % name
        assert m.group(1) == name.lower(), "%s links to #%s" % (name, m.group(1))
        assert m.group(1) in anchors, "%s: README has no section #%s" % (name, m.group(1))


def test_readme_has_a_section_for_each_alert_and_no_other():
    text = README.read_text()
    sections = set(re.findall(r"^### (Holdfast\w+)$", text, re.M))
    assert sections == set(alerts()), (sections ^ set(alerts()))


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    fires, quiet = set(), set()
    for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for a in t.get("alert_rule_test", []):
            assert a["alertname"] in alerts(), "a test of an unknown alert %s" % a["alertname"]
            (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
    assert set(alerts()) - fires == set(), "alerts never tested firing"
    assert set(alerts()) - quiet == set(), "alerts never tested quiet"


def _quantity_bytes(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", q)
    return int(m.group(1)) * {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]


def test_memory_alert_uses_the_kubernetes_examples_limit():
    (deployment,) = [d for d in yaml.safe_load_all((DEPLOY / "k8s" / "deployment.yaml").read_text())
                     if d]
    (sidecar,) = [c for c in deployment["spec"]["template"]["spec"]["initContainers"]
                  if c["name"] == "holdfastd"]
    limit = _quantity_bytes(sidecar["resources"]["limits"]["memory"])
    rule = alerts()["HoldfastMemoryNearLimit"]
    assert re.search(r">\s*0\.9\s*\*\s*%d\b" % limit, rule["expr"]), rule["expr"]
    assert "%d MiB" % (limit >> 20) in rule["annotations"]["summary"]


# ------------------------------------------------------------ dashboard

def test_dashboard_is_provisioning_ready():
    d = dashboard()
    assert d["uid"] == "holdfast" and d["id"] is None and "__inputs" not in d
    variables = {v["name"]: v for v in d["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("job", "instance"):
        assert variables[name]["type"] == "query", name
        assert variables[name]["datasource"]["uid"] == "${datasource}", name
    ids = [p["id"] for p in dashboard_panels()]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    rows = [p["title"] for p in dashboard_panels() if p["type"] == "row"]
    assert REQUIRED_ROWS <= set(rows), REQUIRED_ROWS - set(rows)
    for p in dashboard_panels():
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["datasource"] == p["datasource"], p["title"]


def test_dashboard_panels_do_not_overlap():
    cells = {}
    for p in dashboard_panels():
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, "%r overlaps %r" % (p["title"], cells[(x, y)])
                cells[(x, y)] = p["title"]


def test_dashboard_queries_filter_on_job_and_instance():
    rec = recorded()
    for where, expr in dashboard_exprs():
        for name, ms in read_promql(expr)[0]:
            assert name not in rec, "%s uses recording rule %s: the dashboard must work " \
                                    "without the rules" % (where, name)
            got = {(lbl, op, v) for lbl, op, v in ms}
            assert ("job", "=~", "$job") in got and ("instance", "=~", "$instance") in got, \
                "%s: %s is not filtered on $job and $instance" % (where, name)


def test_readme_explains_every_panel():
    text = README.read_text()
    missing = [p["title"] for p in dashboard_panels()
               if p["type"] != "row" and "**%s**" % p["title"] not in text]
    assert not missing, "panels the README does not mention: %s" % missing


def test_provisioning_files():
    (dashboards,) = yaml.safe_load((PROVISIONING / "dashboards" / "holdfast.yaml").read_text())[
        "providers"]
    assert dashboards["type"] == "file" and dashboards["options"]["path"]
    (ds,) = yaml.safe_load((PROVISIONING / "datasources" / "prometheus.yaml").read_text())[
        "datasources"]
    assert ds["type"] == "prometheus" and ds["url"]


# ------------------------------------------- against the running daemon

def test_scrape_is_of_a_real_stack(scraped, expo):
    # Traffic went through Redis and PostgreSQL; the socket's Metrics text
    # has the same families as GET /metrics.
    assert re.search(r'^holdfast_requests_total\{op="confirm",result="OK"\} 1$', scraped["http"],
                     re.M), scraped["http"]
    assert re.search(r'^holdfast_requests_total\{op="confirm",result="HOLD_LOST"\} 1$',
                     scraped["http"], re.M)
    assert re.search(r"^holdfast_postgres_pool_connected [1-9]", scraped["http"], re.M)
    assert re.search(r"^holdfast_redis_pool_connected [1-9]", scraped["http"], re.M)
    assert re.search(r'^holdfast_waits_total\{outcome="timed_out"\} 1$', scraped["http"], re.M)
    assert Exposition(scraped["socket"]).types == expo.types
    for family in expo.types:
        assert "# HELP %s " % family in scraped["http"], family


def test_every_query_names_only_what_the_daemon_exposes(expo):
    rec = recorded()
    problems = []
    for where, expr, kind in every_expression():
        if kind == "label_values":
            problems += check_label_values_query(expr, expo, rec, where)
        else:
            problems += check_expr(expr, expo, rec, where)
    assert not problems, "\n".join(problems)


def test_every_family_is_on_the_dashboard(expo):
    """Not a rule, a reminder: a new family should get a panel, or a line here
    saying why not."""
    not_shown = {"holdfast_degraded_answers_total"}  # the same as holdfast_degraded_requests_total, summed
    used = set()
    for _, expr in dashboard_exprs():
        for name, _ in read_promql(expr)[0]:
            used.add(expo.family(name))
    assert set(expo.types) - used - not_shown == set()


@pytest.mark.parametrize("expr, complaint", [
    ('rate(holdfast_requets_total[5m])', "holdfast_requets_total is not exposed"),
    ('holdfast_ready_bucket', "holdfast_ready_bucket is not exposed"),
    ('holdfast_request_duration_seconds', "holdfast_request_duration_seconds is not exposed"),
    ('holdfast_requests_total{opp="hold"}', "has no label opp"),
    ('holdfast_requests_total{result="HOLD_LOSTT"}', "never takes the value 'HOLD_LOSTT'"),
    ('holdfast_requests_total{op=~"hold|extendd"}', "never takes the value 'extendd'"),
    ('sum by (operation) (holdfast_requests_total)', "groups by operation"),
    ('holdfast:nothing:rate5m', "holdfast:nothing:rate5m is not exposed"),
    ('rates(holdfast_requests_total[5m])', "unknown function rates()"),
    ('{__name__="holdfast_nope"}', "holdfast_nope is not exposed"),
])
def test_the_check_catches_mistakes(expo, expr, complaint):
    problems = check_expr(expr, expo, recorded(), "t")
    assert any(complaint in p for p in problems), problems


def test_the_check_passes_good_queries(expo):
    for expr in ['histogram_quantile(0.99, sum by (op, le) (rate('
                 'holdfast_request_duration_seconds_bucket{job=~"a", op="hold"}[5m])))',
                 'holdfast:requests:rate5m{op="confirm", result="HOLD_LOST"}',
                 'up == 0 and on (job, instance) holdfast_build_info{version!=""}',
                 'holdfast_waits_total{outcome="granted"} offset 5m']:
        assert check_expr(expr, expo, recorded(), "t") == [], expr

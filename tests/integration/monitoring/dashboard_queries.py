#!/usr/bin/env python3
"""Run every query of a Grafana dashboard against a real Prometheus.

usage: dashboard_queries.py DASHBOARD.json PROMETHEUS_URL

Each target's expr of each panel (rows' panels too) is sent to /api/v1/query as it is
written: the dashboard uses no variable but the data source. A query that errors, or
that answers no series or only NaN (a quantile of a rate of 0: no call between two
scrapes), is a failure naming the panel and the target. Prints one line
per failure, then a summary; exit 1 when anything failed."""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def panels_of(dashboard):
    for p in dashboard.get("panels", []):
        yield p
        for q in p.get("panels", []):  # a collapsed row holds its panels
            yield q


def query(url, expr):
    """(result, error): the vector or matrix answered, or why there is none."""
    data = urllib.parse.urlencode({"query": expr}).encode()
    try:
        with urllib.request.urlopen(url + "/api/v1/query", data=data, timeout=10) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        try:
            body = json.load(e)
        except ValueError:
            return None, f"HTTP {e.code}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        return None, str(e)
    if body.get("status") != "success":
        return None, f"{body.get('errorType', 'error')}: {body.get('error', '?')}"
    return body["data"]["result"], None


def finite(result):
    """Whether some series of a vector or matrix has a finite sample."""
    for series in result:
        samples = series.get("values", []) + ([series["value"]] if "value" in series else [])
        if any(v[1] not in ("NaN", "+Inf", "-Inf") for v in samples):
            return True
    return False


def main():
    path, url = sys.argv[1], sys.argv[2].rstrip("/")
    dashboard = json.load(open(path, encoding="utf-8"))
    failures = queries = 0
    for p in panels_of(dashboard):
        for t in p.get("targets", []):
            expr = t.get("expr")
            if not expr:
                continue
            queries += 1
            where = f"panel \"{p.get('title', p.get('id'))}\" target {t.get('refId', '?')}"
            result, error = query(url, expr)
            if error is not None:
                print(f"FAIL: {where}: query error: {error}: {expr}")
                failures += 1
            elif not result:
                print(f"FAIL: {where}: no data: {expr}")
                failures += 1
            elif not finite(result):
                print(f"FAIL: {where}: only NaN: {expr}")
                failures += 1
    print(f"{queries} queries, {failures} failed")
    sys.exit(1 if failures or not queries else 0)


main()

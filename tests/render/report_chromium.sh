#!/bin/sh
# The HTML report as a browser shows it: Debian's headless Chromium loads the
# page that `table1 --report` writes and the one `taotsim report` makes of a
# table1 and a replay result, with the network cut off; its DOM holds every
# section, table and inline figure (each one drawn: paths and text, no <img>
# to break), and its screenshot is not blank and shows the figures' colours.
# Exits 77 (skipped) without chromium, gnuplot's svg terminal or python3.
# Env: TAOTSIM (the binary), TSIM_SOURCE_ROOT, TSIM_CHROMIUM (default chromium).
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
browser=${TSIM_CHROMIUM:-chromium}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "skipped: $*"; exit 77; }
command -v "$browser" >/dev/null 2>&1 || skip "$browser not found (Debian: apt-get install chromium)"
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
"${TAOTSIM_GNUPLOT:-gnuplot}" -e 'set terminal svg' </dev/null >/dev/null 2>&1 ||
    skip "gnuplot with the svg terminal not found (Debian: gnuplot-nox)"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
pass=0
fail=0
check() { # check DESCRIPTION COMMAND...: one assertion
    what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
# Chromium with its own profile, no sandbox when root (it refuses to start
# otherwise), and every host name unresolvable: a page that needed the
# network would show it.
sandbox=""
[ "$(id -u)" = 0 ] && sandbox=--no-sandbox
browse() { # browse PAGE ARGS...: stdout of chromium --headless
    page=$1
    shift
    HOME=$scratch timeout 240 "$browser" --headless $sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$scratch/profile" --host-resolver-rules='MAP * ~NOTFOUND' \
        "$@" "file://$page" 2>>"$scratch/chromium.log"
}
export TAOTSIM_NO_PROGRESS=1 TMPDIR="$scratch"
"$bin" table1 --planners taot,echo --format json -o "$scratch/t.json" --report "$scratch/t1.html" &&
    "$bin" replay "$root/traces/ep16-imb30.jsonl.gz" --planners taot,fastermoe --per-record --format json \
        -o "$scratch/r.json" 2>/dev/null &&
    "$bin" report "$scratch/t.json" "$scratch/r.json" -o "$scratch/report.html" &&
    "$bin" advise "$root/traces/ep16-imb50.jsonl.gz" --planners none,eplb,taot --slot-list 1,2 --intervals 8 \
        --format json -o "$scratch/a.json" &&
    "$bin" replay "$root/traces/ep16-imb30.jsonl.gz" --planners taot,eplb --by-layer --format json \
        -o "$scratch/l.json" 2>/dev/null &&
    "$bin" report "$scratch/a.json" "$scratch/l.json" -o "$scratch/advise.html" || {
    echo "FAIL: taotsim could not write the reports"
    echo "script: 0 passed, 1 failed"
    exit 1
}
# dom_check PAGE SECTIONS: the DOM Chromium built from PAGE has SECTIONS
# sections side by side (none swallowed by another), in each a results table
# and its figures, every figure an inline SVG with drawn paths and text, and
# as many tables and figures as the file holds.
dom_check() {
    browse "$1" --dump-dom >"$scratch/dom.html"
    python3 - "$1" "$scratch/dom.html" "$2" <<'PY'
import html.parser, sys

class Count(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.depth, self.sections, self.nested = 0, 0, 0
        self.tags = {}
        self.svg = None          # [paths, texts] of the figure being read
        self.empty_figures = 0
    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "section":
            self.nested += self.depth > 0
            self.depth += 1
            self.sections += 1
        elif tag == "svg":
            self.svg = [0, 0]
        elif self.svg is not None and tag in ("path", "text"):
            self.svg[tag == "text"] += 1
    def handle_endtag(self, tag):
        if tag == "section":
            self.depth -= 1
        elif tag == "svg" and self.svg is not None:
            self.empty_figures += min(self.svg) == 0
            self.svg = None

def parse(path):
    p = Count()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    return p

src, dom, want = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
problems = []
if dom.sections != want or dom.nested:
    problems.append("%d sections (%d nested), expected %d side by side" % (dom.sections, dom.nested, want))
for tag in ("table", "svg", "h2", "h3", "tr"):
    if dom.tags.get(tag, 0) != src.tags.get(tag, 0) or not src.tags.get(tag):
        problems.append("<%s>: %d in the DOM, %d in the file" % (tag, dom.tags.get(tag, 0), src.tags.get(tag, 0)))
for tag in ("img", "script", "link", "iframe", "object"):
    if dom.tags.get(tag):
        problems.append("%d <%s> in the DOM" % (dom.tags[tag], tag))
if dom.empty_figures:
    problems.append("%d figures without paths or text" % dom.empty_figures)
print("; ".join(problems) if problems else "ok: %d sections, %d tables, %d figures"
      % (dom.sections, dom.tags["table"], dom.tags["svg"]))
sys.exit(1 if problems else 0)
PY
}
check "table1 --report as Chromium builds it" dom_check "$scratch/t1.html" 1
check "taotsim report of table1 and replay as Chromium builds it" dom_check "$scratch/report.html" 2
check "taotsim report of advise and replay --by-layer as Chromium builds it" dom_check "$scratch/advise.html" 2
# The file as html.parser reads it: every tag closed, no URL in any
# attribute or text (the inline figures' namespaces are dropped), and the
# advise section's recommendation and settings and the per-layer table there.
no_url() {
    python3 - "$1" <<'PY'
import html.parser, re, sys

class Scan(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.open, self.urls, self.h3 = [], [], []
        self.in_h3 = False
    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br"):  # void elements; the figures' are self-closed
            self.open.append(tag)
        self.in_h3 = tag == "h3"
        self.urls += [v for _, v in attrs if v and re.search(r"(https?|ftp)://|^//", v)]
    def handle_startendtag(self, tag, attrs):
        self.urls += [v for _, v in attrs if v and re.search(r"(https?|ftp)://|^//", v)]
    def handle_endtag(self, tag):
        if not self.open or self.open.pop() != tag:
            self.open.append("(</%s> out of order)" % tag)
    def handle_data(self, data):
        self.urls += re.findall(r"https?://\S+", data)
        if self.in_h3:
            self.h3.append(data.split(" (")[0])
            self.in_h3 = False

p = Scan()
p.feed(open(sys.argv[1], encoding="utf-8").read())
p.close()
want = {"Recommendation", "Settings", "Per layer", "Figures"}
problems = ["unclosed: %s" % " ".join(p.open)] if p.open else []
problems += ["URL %s" % u for u in p.urls[:3]]
problems += ["no <h3> %s" % w for w in sorted(want - set(p.h3))]
print("; ".join(problems) if problems else "ok: parsed, no URL, %s" % ", ".join(sorted(want)))
sys.exit(1 if problems else 0)
PY
}
check "the advise and per-layer report parses and loads nothing" no_url "$scratch/advise.html"
# The top of the page as Chromium draws it: the results table and the first
# figures. Not blank (over 5% ink), and the figures drawn (over 1% strongly
# coloured pixels: the tables and text are grey).
browse "$scratch/report.html" --window-size=1200,2400 --screenshot="$scratch/shot.png" >/dev/null
seen=$(python3 "$here/png_check.py" "$scratch/shot.png" 2>&1)
if [ -s "$scratch/shot.png" ] && [ "$(echo "$seen" | wc -w)" = 3 ]; then
    set -- $seen
    echo "screenshot $1: $2% ink, $3% coloured"
    check "the screenshot is blank ($2% ink)" python3 -c "import sys; sys.exit(not float('$2') > 5)"
    check "the screenshot shows no figure ($3% coloured)" python3 -c "import sys; sys.exit(not float('$3') > 1)"
else
    echo "FAIL: Chromium wrote no screenshot that can be read: $seen"
    tail -5 "$scratch/chromium.log"
    fail=$((fail + 1))
fi
echo "script: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

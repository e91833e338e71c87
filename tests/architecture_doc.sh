#!/usr/bin/env bash
# docs/architecture.md against the tree (issue 21): every folder and file it
# names in backquotes or in its layer diagram exists (and every source folder
# README's Layout section names); every source folder
# (src/*, baselines and its subfolders, gpu) is described; and the layer order
# it states, in its numbered list and in its diagram, is the order of
# tests/layers.sh.
# Usage: tests/architecture_doc.sh SOURCE_ROOT [DOC]
#        tests/architecture_doc.sh --self-test SOURCE_ROOT
#        (damaged copies of the doc must each fail)
set -uo pipefail

check() {
    local root=$1 doc=$2 bad=0
    cd "$root" || return 2
    [ -f "$doc" ] || { echo "architecture_doc: no $doc"; return 1; }

    # Paths in backquotes: those under a top-level folder must exist; a bare
    # file name (plot.c) must be some file of src/, baselines/, gpu/, tests/.
    while IFS= read -r p; do
        case "$p" in *'<'* | *'*'* | *' '*) continue ;; esac
        if [[ "$p" =~ ^(src|baselines|gpu|tests|docs|plots|traces|examples|bench|scripts|include)(/|$) ]]; then
            [ -e "$p" ] || { echo "$doc names $p, which does not exist"; bad=1; }
        elif [[ "$p" =~ ^[A-Za-z0-9_]+\.(c|h|cu|sh)$ ]]; then
            [ -n "$(find src baselines gpu tests -name "$p" -print -quit)" ] ||
                { echo "$doc names $p, which no source folder holds"; bad=1; }
        fi
    done < <(grep -o '`[^`]*`' "$doc" | tr -d '`' | sort -u)

    # README's Layout section names folders too.
    if [ -f README.md ]; then
        while IFS= read -r p; do
            p=${p%/}
            [[ "$p" =~ ^(src|baselines|gpu)(/|$) ]] || continue
            [ -e "$p" ] || { echo "README.md (Layout) names $p, which does not exist"; bad=1; }
        done < <(awk '/^## /{on = ($0 ~ /^## Layout/)} on' README.md | grep -o '`[^`]*`' | tr -d '`' | sort -u)
    fi

    # The diagram (the first code block): its layer folders, bottom line first,
    # left to right within a line.
    local diagram
    diagram=$(awk '/^```/{n++; next} n == 1' "$doc" | tac |
        grep -oE '(^|[[:space:]])(src/[a-z]+|baselines/?|gpu/?)([[:space:]]|$)' | tr -d ' /' |
        sed -E 's#^src([a-z]+)$#src/\1#' | awk '!seen[$0]++' | tr '\n' ' ')
    for d in $diagram; do
        [ -d "$d" ] || { echo "$doc: the diagram names $d, which is not a folder"; bad=1; }
    done

    # The numbered list of layers, bottom to top, siblings on one line.
    local listed
    listed=$(grep -E '^[0-9]+\. `' "$doc" | sed -E 's/^[0-9]+\. //; s/[`,]//g' | tr -s ' ')
    local script
    script=$(awk '/^ranks=\(/{on=1; next} on && /^\)/{on=0} on' tests/layers.sh | tr -d '"' | sed -E 's/^ +//; s/ +$//')
    if [ "$listed" != "$script" ]; then
        echo "$doc: its layer list differs from tests/layers.sh:"
        diff <(echo "$listed") <(echo "$script") | sed 's/^/  /'
        bad=1
    fi
    local flat
    flat=$(echo "$script" | tr '\n' ' ' | tr -s ' ')
    if [ "$(echo "$diagram" | tr -s ' ')" != "$flat" ]; then
        echo "$doc: its diagram's layers, bottom to top ($diagram) are not tests/layers.sh's ($flat)"
        bad=1
    fi

    # Every source folder is described.
    for d in src/*/ baselines/ baselines/*/ gpu/; do
        d=${d%/}
        [ -d "$d" ] || continue
        case "$d" in
        baselines/*) grep -q "${d#baselines/}/" "$doc" || { echo "$doc does not describe $d"; bad=1; } ;;
        *) grep -qE "(^|[^a-z/])$d([^a-z]|$)" "$doc" || { echo "$doc does not describe $d"; bad=1; } ;;
        esac
    done
    return "$bad"
}

if [ "${1:-}" = --self-test ]; then
    root=${2:-$(cd "$(dirname "$0")/.." && pwd)}
    t=$(mktemp -d) || exit 2
    trap 'rm -rf "$t"' EXIT
    doc=$root/docs/architecture.md
    fails=0
    damage() { # NAME SED-SCRIPT: the check must fail on the doc so damaged
        sed -E "$2" "$doc" >"$t/$1.md"
        if cmp -s "$doc" "$t/$1.md"; then
            echo "self-test: $1 changed nothing"
            fails=1
        elif (check "$root" "$t/$1.md" >/dev/null); then
            echo "self-test: the check passed a doc with $1"
            fails=1
        fi
    }
    damage "a missing file" 's#`src/render`#`src/renderer`#'
    damage "two layers swapped" 's#^7\. `src/study`#7. `src/render`#; s#^8\. `src/render`#8. `src/study`#'
    damage "a folder left out" '/src\/bound/d'
    damage "the diagram out of order" 's#^          src/render #          src/renderX#'
    (check "$root" "$doc" >/dev/null) || { echo "self-test: the real doc fails"; fails=1; }
    if [ "$fails" -eq 0 ]; then
        echo "architecture doc self-test: passed"
        echo "script: 1 passed, 0 failed"
        exit 0
    fi
    echo "script: 0 passed, 1 failed"
    exit 1
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if check "$root" "${2:-docs/architecture.md}"; then
    echo "architecture doc: every path it names exists, every source folder is described, its layers are tests/layers.sh's"
    echo "script: 1 passed, 0 failed"
    exit 0
fi
echo "script: 0 passed, 1 failed"
exit 1

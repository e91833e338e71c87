#!/usr/bin/env bash
# The structure check: every #include "..." in a library layer may name only a
# header of its own layer or of a layer below it (docs/architecture.md, Layout). An upward
# include would also fail to compile (each layer's include path holds only the
# layers below); this check says which file and line broke the rule, and it
# covers cycles, since a cycle between two folders needs one upward include.
# Usage: tests/layers.sh [SOURCE_ROOT]. Exit 0 when clean, 1 with a list.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# Bottom to top; folders on one line share a rank (they may not include each other).
ranks=(
    "src/util"
    "src/model"
    "src/trace"
    "src/planner src/bound"
    "baselines gpu"
    "src/registry"
    "src/study"
    "src/render"
    "src/cli"
)

declare -A rank_of_dir header_rank header_dir
for i in "${!ranks[@]}"; do
    for d in ${ranks[$i]}; do
        [ -d "$d" ] || { echo "layers.sh: missing layer folder $d"; exit 1; }
        rank_of_dir[$d]=$i
        while IFS= read -r h; do
            name=$(basename "$h")
            if [ -n "${header_dir[$name]:-}" ]; then
                echo "layers.sh: header $name exists in both ${header_dir[$name]} and $d"
                exit 1
            fi
            header_rank[$name]=$i
            header_dir[$name]=$d
        done < <(find "$d" -name '*.h' | sort)
    done
done

# The layer a file belongs to: the longest layer folder that contains it.
layer_of() {
    local f=$1 best=""
    for d in "${!rank_of_dir[@]}"; do
        case "$f" in "$d"/*) [ ${#d} -gt ${#best} ] && best=$d ;; esac
    done
    echo "$best"
}

bad=0
checked=0
while IFS= read -r f; do
    layer=$(layer_of "$f")
    [ -n "$layer" ] || continue
    r=${rank_of_dir[$layer]}
    while IFS=: read -r line inc; do
        name=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$inc")
        name=$(basename "$name")
        checked=$((checked + 1))
        # Generated (tsim_config.h) and outside headers are not layered.
        [ -n "${header_rank[$name]:-}" ] || continue
        hr=${header_rank[$name]}
        if [ "$hr" -gt "$r" ]; then
            echo "$f:$line: includes $name from ${header_dir[$name]}, a layer above $layer"
            bad=$((bad + 1))
        elif [ "$hr" -eq "$r" ] && [ "${header_dir[$name]}" != "$layer" ]; then
            echo "$f:$line: includes $name from ${header_dir[$name]}, a sibling of $layer"
            bad=$((bad + 1))
        fi
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | sed -E 's/^([0-9]+):/\1:/')
done < <(find src baselines gpu -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)

# The library returns, the CLI speaks (issue 21): below src/render nothing
# prints to the terminal (printf, puts, perror, stderr, stdout), exits or
# aborts; it returns a tsim_error, and render/ writes only to the FILE* it is
# handed. Writing data files through a FILE* (a trace, a layout) is allowed,
# and so is util/outfile.c's "-" for standard output. Comment lines are
# skipped.
speak=0
render_rank=${rank_of_dir[src/render]}
while IFS= read -r f; do
    layer=$(layer_of "$f")
    [ -n "$layer" ] && [ "${rank_of_dir[$layer]}" -lt "$render_rank" ] || continue
    [ "$f" = src/util/outfile.c ] && continue
    while IFS= read -r hit; do
        echo "$f:$hit  <- the library prints or exits; return a tsim_error and let cli/ say it"
        speak=$((speak + 1))
    done < <(grep -n '' "$f" | grep -vE '^[0-9]+:[[:space:]]*(/?\*|//)' | sed -E 's#/\*.*\*/##g; s#//.*$##' |
        grep -E '(^|[^a-z_])(printf|vprintf|puts|perror|exit|_exit|abort)[[:space:]]*\(|(^|[^a-z_])(stderr|stdout)([^a-z_]|$)')
done < <(find src baselines gpu -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)
bad=$((bad + speak))

if [ "$bad" -gt 0 ]; then
    [ "$speak" -gt 0 ] && echo "layers.sh: $speak printing or exiting calls below src/render"
    echo "layers.sh: $((bad - speak)) upward or sideways includes (of $checked checked)"
    echo "script: 0 passed, 1 failed"
    exit 1
fi
echo "layers.sh: $checked includes checked, every one points down; nothing below src/render prints or exits"
echo "script: 1 passed, 0 failed"

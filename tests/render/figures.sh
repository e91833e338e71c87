#!/bin/sh
# One render test per figure family, through the command line as a user runs
# it: a result from the study command, `taotsim plot RESULT --format both`
# (the fit, advise and replay --traffic: their --plots), then for each
# family's figure: gnuplot wrote a PNG and an SVG, the SVG is well-formed,
# draws paths, and shows the title the script sets (naming the trace or
# regime and K where it has them), both axis labels and every legend entry
# (planners, "paper", the key of a heat map, whose colour box is counted).
# Exits 77 (skipped) without gnuplot's pngcairo and svg terminals or python3.
# Env: TAOTSIM (the binary), TSIM_SOURCE_ROOT.
set -u
root=${TSIM_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TAOTSIM:-$root/build/taotsim}
here=$(cd "$(dirname "$0")" && pwd)
gp=${TAOTSIM_GNUPLOT:-gnuplot}
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 not found"; exit 77; }
"$gp" -e 'set terminal pngcairo; set terminal svg' </dev/null >/dev/null 2>&1 ||
    { echo "skipped: $gp with the pngcairo and svg terminals not found (Debian: gnuplot-nox)"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TAOTSIM_NO_PROGRESS=1
cd "$root" || exit 2
pass=0
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# figure DIR NAME TEXT...: DIR/NAME.png and DIR/NAME.svg are rendered, the
# SVG draws at least 10 paths and shows each TEXT as one of its text
# elements; "~TEXT" asks for a text element that contains TEXT (a title);
# "#colorboxes N" for N colour boxes (a heat map's key, see svg_text.py).
# The script NAME.gp sets the title shown (TITLE = or set title).
figure() {
    dir=$1
    name=$2
    shift 2
    if ! [ -s "$dir/$name.png" ] || [ "$(head -c 8 "$dir/$name.png" | od -An -c | tr -d ' ')" != '211PNG\r\n032\n' ]; then
        bad "$name: no PNG rendered"
        return
    fi
    [ "$(wc -c <"$dir/$name.png")" -gt 2000 ] || { bad "$name: the PNG is nearly empty"; return; }
    if ! python3 "$here/svg_text.py" "$dir/$name.svg" >"$scratch/text" 2>"$scratch/err"; then
        bad "$name: $(cat "$scratch/err")"
        return
    fi
    paths=$(sed -n 's/^#paths //p' "$scratch/text")
    [ "${paths:-0}" -ge 10 ] || { bad "$name: the SVG draws $paths paths"; return; }
    for want in "$@"; do
        case $want in
        "~"*) grep -qF -- "${want#\~}" "$scratch/text" || { bad "$name: no text containing '${want#\~}'"; return; } ;;
        "#"*) grep -qxF -- "$want" "$scratch/text" ||
            { bad "$name: expected $want (the key of a heat map), the SVG has $(grep '^#colorboxes' "$scratch/text")"; return; } ;;
        *) grep -qxF -- "$want" "$scratch/text" || { bad "$name: no text '$want' (axis label or legend)"; return; } ;;
        esac
    done
    # the title the script sets, each of its lines (\n in the string)
    sed -n 's/^TITLE = "\(.*\)"$/\1/p; s/^set title "\(.*\)"$/\1/p' "$dir/$name.gp" | sed 's/\\n/\n/g' >"$scratch/title"
    [ -s "$scratch/title" ] || { bad "$name: $name.gp sets no TITLE"; return; }
    missing=$(grep -vxF -f "$scratch/text" "$scratch/title" | head -1)
    [ -z "$missing" ] || { bad "$name: the title line '$missing' of $name.gp is not drawn"; return; }
    pass=$((pass + 1))
}

# plot STUDY RESULT: taotsim plot into $scratch/STUDY
plot() {
    "$bin" plot "$2" -o "$scratch/$1" --format both >/dev/null 2>"$scratch/$1.err" ||
        bad "$1: taotsim plot failed: $(head -3 "$scratch/$1.err")"
}

cost="weighted cost per record (intra + λ_eval × inter transfers)"
residual="residual imbalance after planning (%)"
imb="imbalance (max load - mean) / mean (%)"
trace=traces/ep16-imb30.jsonl.gz

# replay, per record: "before planning" named beside the planner whose line it hides
"$bin" replay $trace --planners taot,fastermoe --per-record --format json -o "$scratch/replay.json" 2>/dev/null
plot replay "$scratch/replay.json"
figure "$scratch/replay" replay "~trace ep16-imb30.jsonl.gz, K = 2" "record (trace order)" "$imb" \
    taot fastermoe "before planning (= fastermoe)"

# replay summary: a candlestick per planner, for each metric
"$bin" replay $trace --planners taot,fastermoe --format json -o "$scratch/summary.json" 2>/dev/null
plot summary "$scratch/summary.json"
figure "$scratch/summary" replay_imbalance "~trace ep16-imb30.jsonl.gz, K = 2" "$imb" "before planning" taot fastermoe
for m in weighted intra inter offloaded; do
    figure "$scratch/summary" replay_$m "~trace ep16-imb30.jsonl.gz, K = 2" taot fastermoe
done

# table1: grouped bars with the paper's values, both the weighted and the residual chart
"$bin" table1 --planners taot,echo --format json -o "$scratch/table1.json"
plot table1 "$scratch/table1.json"
figure "$scratch/table1" table1_weighted "~Table 1 (bundled traces, K = 2)" "initial imbalance, by EP size" "$cost" \
    taot echo paper EP16 EP32
figure "$scratch/table1" table1_residual "~Table 1 (bundled traces, K = 2)" "initial imbalance, by EP size" "$residual" \
    taot echo paper EP16 EP32
# table1, one Pareto figure per cell
figure "$scratch/table1" table1_pareto_ep32_imb70 "~EP32 at 70% initial imbalance" "$residual" "$cost" \
    taot echo "paper (hollow)" "Pareto front"

# ablation: bars per TAOT phase combination
"$bin" ablation --seeds 1 --tokens 512 --microbatches 2 --format json -o "$scratch/ablation.json"
plot ablation "$scratch/ablation.json"
figure "$scratch/ablation" ablation "~Ablation" "TAOT phases switched on or off" \
    "expert transfers per record (weighted: intra + λ_eval × inter)" intra-node inter-node weighted paper

# sweep: a curve per planner at each λ_plan, titled with the trace
"$bin" sweep --planners taot,echo --lambda-plan 1,3 --lambda-eval 1-5+2 --format json -o "$scratch/sweep.json"
plot sweep "$scratch/sweep.json"
for lp in 1 3; do
    figure "$scratch/sweep" sweep_lp$lp "~λ_plan = $lp (trace ep32-imb50.jsonl.gz, K = 2" \
        "λ_eval: cost of one cross-node expert transfer (one intra-node transfer = 1)" \
        "weighted cost per record (intra + λ_eval × inter transfers)" taot echo
done

# scaling: residual and weighted cost along each axis
"$bin" scaling --planners taot,echo --eps 8,16 --imbalances 0.3,0.7 --slot-list 1,2 --tokens 512 --microbatches 2 \
    --no-timing --format json -o "$scratch/scaling.json"
plot scaling "$scratch/scaling.json"
figure "$scratch/scaling" scaling_ep_residual "~Residual imbalance vs EP size" "EP size (ranks)" "$residual" taot echo
figure "$scratch/scaling" scaling_ep_weighted "~vs EP size" "EP size (ranks)" taot echo
figure "$scratch/scaling" scaling_imbalance_residual "~Residual imbalance vs" "$residual" taot echo
figure "$scratch/scaling" scaling_slots_weighted "~vs" taot echo

# fit: a heat map per planner, with the key that says what the two numbers of a square are
"$bin" fit --hot-ranks 1 --hot-experts all --hot-skew 0 --concentration 200 --tokens 512 --microbatches 2 \
    --format json -o "$scratch/fit.json" --plots "$scratch/fit" >/dev/null 2>"$scratch/fit.err" ||
    bad "fit --plots failed: $(head -3 "$scratch/fit.err")"
for p in taot echo; do
    figure "$scratch/fit" fit_residual_$p "~fit: $p against the paper" \
        "in each square: ours (top, black), the paper's value (below, grey)" \
        "~hot ranks 1, hot experts all, skew 0, concentration 200, 512 tokens" "improve pp" intra inter EP16 EP32 \
        "#colorboxes 1"
done

# advise: balancedness against memory and against weight traffic, one colour
# per planner, the Pareto set and the recommended setting in the legend; the
# same figures from `advise --plots` and from `taotsim plot` of its JSON
"$bin" advise traces/ep16-imb50.jsonl.gz --planners none,eplb,taot --slot-list 1,2 --intervals 1,8 --lambda-plan 3 \
    --format json -o "$scratch/advise.json" --plots "$scratch/advise" >/dev/null 2>"$scratch/advise.err" ||
    bad "advise --plots failed: $(head -3 "$scratch/advise.err")"
plot advise_plot "$scratch/advise.json"
balanced="balancedness (mean load / max load, mean over records)"
for d in advise advise_plot; do
    figure "$scratch/$d" advise_memory "~traces/ep16-imb50.jsonl.gz, slot budgets K = 1, 2" "$balanced" \
        "memory per rank (MB): guest slots × one expert's weights" none eplb taot "Pareto set" recommended "target 0.95"
    figure "$scratch/$d" advise_traffic "~traces/ep16-imb50.jsonl.gz, slot budgets K = 1, 2" "$balanced" \
        "weight traffic per record: weighted + re-homed intra + λ_eval × re-homed inter" none eplb taot "Pareto set" \
        recommended
done

# replay --by-layer: balancedness per layer; moonep plans at its own K (E/R),
# which the title names beside the replay's K
"$bin" replay $trace --planners taot,eplb,moonep --by-layer --format json -o "$scratch/layers.json" 2>/dev/null
plot layers "$scratch/layers.json"
figure "$scratch/layers" replay_layers "~trace ep16-imb30.jsonl.gz, K = 2 (moonep K = 8)" layer \
    "balancedness: mean load / max load" taot eplb moonep "dotted: vLLM's form" "before planning"

# table1 --bounds: each planner's point against the frontier's lower bound.
# Ten one-record traces with few experts keep the bound's LPs fast.
mkdir -p "$scratch/tr"
for ep in 16 32; do
    for imb in 10 20 30 50 70; do
        "$bin" gen -o "$scratch/tr/ep$ep-imb$imb.jsonl.gz" --experts $((2 * ep)) --ep $ep --topk 2 --tokens 2048 \
            --microbatches 1 --layers 1 --concentration 1000 --imbalance 0.$imb 2>/dev/null ||
            bad "gen ep$ep-imb$imb failed"
    done
done
"$bin" table1 --traces "$scratch/tr" --planners taot,echo --bounds --format json -o "$scratch/bounds.json"
plot bounds "$scratch/bounds.json"
figure "$scratch/bounds" table1_frontier_ep32_imb70 "~Table 1 (traces in tr, K = 2), cell ep32.imb70" \
    "weighted cost (mean per record)" "rho after, % (mean per record)" "no plan below (lower bound)" taot echo

# replay --traffic: a heat map per planner, before and after, each panel with
# its colour box (the key) labelled; the title names the planner's own K
"$bin" replay $trace --planners taot,moonep --traffic node --plots "$scratch/traffic" --plot-format both \
    -o "$scratch/traffic.md" 2>"$scratch/traffic.err" || bad "replay --traffic --plots failed: $(head -3 "$scratch/traffic.err")"
figure "$scratch/traffic" traffic_taot "~taot (trace ep16-imb30.jsonl.gz, K = 2)" "computing node" "source node" \
    before after tokens "#colorboxes 2"
figure "$scratch/traffic" traffic_moonep "~moonep (trace ep16-imb30.jsonl.gz, K = 8)" "computing node" "source node" \
    before after tokens "#colorboxes 2"

echo "script: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

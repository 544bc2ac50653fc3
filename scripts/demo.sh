#!/usr/bin/env bash
# `make demo`: trains the Fashion-MNIST MLP on a cluster of 1 ps task and 2 workers started by
# `distflow local`, then prints the test accuracy and where the checkpoint, the TensorBoard event
# file and a plot of loss and accuracy over the global steps are.
#
#   scripts/demo.sh [BUILD_DIR]     (DEMO_STEPS=N changes the 12000 global steps)
set -euo pipefail

build="${1:-build}"
steps="${DEMO_STEPS:-12000}"
out="$build/demo/$(date +%Y%m%d-%H%M%S)"
logs="$out/logs"
checkpoints="$out/checkpoints"
mkdir -p "$out"

for tool in "$build/bin/distflow" "$build/bin/fashion_mnist"; do
  [ -x "$tool" ] || { echo "demo: $tool is missing: run make build first" >&2; exit 1; }
done
command -v gnuplot >/dev/null ||
  { echo "demo: gnuplot is missing: run scripts/install_deps.sh (Debian's gnuplot-nox)" >&2; exit 1; }

echo "demo: Fashion-MNIST MLP, 1 ps + 2 workers (asynchronous), $steps global steps of 100 images"
# One thread per task: three processes share this machine's cores.
"$build/bin/distflow" local --ps=1 --workers=2 --log_dir="$logs" -- \
  "$build/bin/fashion_mnist" --model=mlp --train_steps="$steps" --batch_size=100 \
  --log_every=100 --steps_to_validate=1000 --threads=1 \
  --checkpoint_dir="$checkpoints" --save_checkpoint_steps=4000

chief_log="$logs/worker0.log"
accuracy=$(sed -n 's/^test_accuracy=//p' "$chief_log" | tail -n 1)
[ -n "$accuracy" ] || { echo "demo: the chief printed no test_accuracy (see $chief_log)" >&2; exit 1; }
latest=$(sed -n 's/.*"latest": *"\([^"]*\)".*/\1/p' "$checkpoints/checkpoint")
events=$(ls -t "$checkpoints"/events.out.tfevents.* | head -n 1)

# The chief's progress lines (step, loss) and validations (step, accuracy) as one CSV, drawn with
# the loss on the left axis and the accuracy on the right.
csv="$out/metrics.csv"
awk '
  BEGIN { print "global_step,loss,validation_accuracy" }
  $1 == "progress" {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    split(f["step"], s, "/"); print s[1] "," f["loss"] ","
  }
  $1 ~ /^global_step=/ && $2 ~ /^validation_accuracy=/ {
    split($1, s, "="); split($2, a, "="); print s[2] ",," a[2]
  }' "$chief_log" > "$csv"
last_step=$(sed -n 's/.*stopped at global_step=//p' "$chief_log" | tail -n 1)
echo "${last_step:-$steps},,$accuracy" >> "$csv"

png="$out/loss_accuracy.png"
gnuplot <<GNUPLOT
set terminal pngcairo size 900,540
set output "$png"
set datafile separator ","
set datafile missing ""
set title "Fashion-MNIST MLP, 1 ps + 2 workers (distflow local)"
set xlabel "global step"
set ylabel "training loss"
set y2label "test accuracy"
set ytics nomirror
set y2tics
set y2range [0.5:1]
set xrange [0:*]
set autoscale xfixmax
set key center right
plot "$csv" using 1:2 every ::1 with lines title "loss (chief's batches)", \
     "$csv" using 1:3 every ::1 axes x1y2 with linespoints pointtype 7 title "test accuracy"
GNUPLOT

echo
echo "demo: test accuracy  $accuracy"
echo "demo: checkpoint     $checkpoints/$latest"
echo "demo: event file     $events   (tensorboard --logdir $checkpoints)"
echo "demo: plot           $png"
echo "demo: logs           $logs/"

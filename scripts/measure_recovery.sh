#!/usr/bin/env bash
# Times two recoveries from a task killed with SIGKILL, with real processes on 127.0.0.1 (see
# docs/benchmarks.md, "Recovery times"):
#
#   scripts/measure_recovery.sh master BUILD [RUNS]
#     A client (recovery_trainer --master) whose master is `distflow server` in another process:
#     the master's task is killed between two of the client's steps and started again on its
#     port. Prints the client's exit status, the time from the new master listening to the
#     client's first step after it, and the error its monitored session recovered from.
#   scripts/measure_recovery.sh chief FASHION_MNIST_BINARY [RUNS]
#     The Fashion-MNIST job (1 ps, 2 workers) with its chief killed in its final wait for the
#     other worker: worker 1 finishes and reports while the chief is down, then the chief is
#     started again. Prints how long the restarted chief takes to end the job, and when the ps
#     exits.
#   scripts/measure_recovery.sh psdone FASHION_MNIST_BINARY [RUNS]
#     The same job with the chief stopped (SIGSTOP) in the middle of training while worker 1
#     trains to the last step and reports done; then the ps is killed and started again on its
#     port and the chief goes on (SIGCONT). Prints how long the chief takes from the ps restart
#     to its exit (it restores a checkpoint, trains the steps left, and waits for worker 1's
#     report), and every task's exit status.
set -uo pipefail
mode="${1:?usage: measure_recovery.sh master BUILD [RUNS] | chief|psdone FASHION_MNIST_BINARY [RUNS]}"
bin="${2:?missing BUILD or FASHION_MNIST_BINARY}"
runs="${3:-3}"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
seconds() { echo "$2 - $1" | bc; }

master_run() {
  local dir ps port worker server client t0 t1 steps
  dir=$(mktemp -d)
  ps=127.0.0.1:$(free_port)
  port=$(free_port)
  worker=127.0.0.1:$port
  "$bin/bin/recovery_trainer" --job_name=ps --task_index=0 --ps_hosts="$ps" \
    --worker_hosts="$worker" >"$dir/ps.log" 2>&1 &
  local ps_pid=$!
  "$bin/bin/distflow" server --job_name=worker --task_index=0 --ps_hosts="$ps" \
    --worker_hosts="$worker" >"$dir/master.log" 2>&1 &
  server=$!
  "$bin/bin/recovery_trainer" --job_name=worker --task_index=0 --ps_hosts="$ps" \
    --worker_hosts="$worker" --master="$worker" --checkpoint_dir="$dir" --last_step=60 \
    --save_checkpoint_steps=10 --pause_at_step=30 --pause_file="$dir/go" >"$dir/client.log" 2>&1 &
  client=$!
  until grep -q paused "$dir/client.log"; do sleep 0.01; done
  kill -9 "$server"
  wait "$server" 2>/dev/null
  "$bin/bin/distflow" server --job_name=worker --task_index=0 --ps_hosts="$ps" \
    --worker_hosts="$worker" >"$dir/master2.log" 2>&1 &
  server=$!
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.01; done
  t0=$(now)
  touch "$dir/go"
  steps=$(grep -c global_step= "$dir/client.log")
  until [ "$(grep -c global_step= "$dir/client.log")" -gt "$steps" ] ||
    ! kill -0 "$client" 2>/dev/null; do sleep 0.002; done
  t1=$(now)
  wait "$client"
  echo "client exit $?; first step (or exit) $(seconds "$t0" "$t1") s after the new master" \
    "listened; $(grep -o 'Recovering the monitored session from: [A-Z_]*' "$dir/client.log" | head -1)"
  kill -9 "$server" "$ps_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
}

# Sets `flags` to the flags of a 1 ps + 2 worker job on free ports that
# checkpoints into $1/ckpt every $2 steps.
job_flags() {
  flags=(--ps_hosts=127.0.0.1:$(free_port)
    --worker_hosts=127.0.0.1:$(free_port),127.0.0.1:$(free_port) --model=mlp --batch_size=50
    --train_steps=300 --log_every=50 --threads=1 --checkpoint_dir="$1/ckpt"
    --save_checkpoint_steps=$2)
}

chief_run() {
  local dir flags chief t0 t1 t2 worker1_exit chief_exit ps_exit
  dir=$(mktemp -d)
  job_flags "$dir" 100
  "$bin" --job_name=ps --task_index=0 "${flags[@]}" >"$dir/ps.log" 2>&1 &
  local ps_pid=$!
  "$bin" --job_name=worker --task_index=0 "${flags[@]}" >"$dir/chief.log" 2>&1 &
  chief=$!
  until grep -q test_accuracy "$dir/chief.log"; do sleep 0.05; done
  sleep 1  # into on_training_end's wait
  kill -9 "$chief"
  wait "$chief" 2>/dev/null
  "$bin" --job_name=worker --task_index=1 "${flags[@]}" >"$dir/worker1.log" 2>&1 &
  local worker1=$!
  # Until worker 1 has reported done (it then waits for the job's end) or exited.
  until grep -q "reported done" "$dir/worker1.log" || ! kill -0 "$worker1" 2>/dev/null; do
    sleep 0.02
  done
  t0=$(now)
  "$bin" --job_name=worker --task_index=0 "${flags[@]}" >"$dir/chief2.log" 2>&1
  chief_exit=$?
  t1=$(now)
  wait "$worker1"
  worker1_exit=$?
  wait "$ps_pid"
  ps_exit=$?
  t2=$(now)
  echo "worker 1 exit $worker1_exit; restarted chief exit $chief_exit after" \
    "$(seconds "$t0" "$t1") s; ps exit $ps_exit $(seconds "$t1" "$t2") s later;" \
    "gave up waiting: $(grep -c 'ending the job anyway' "$dir/chief2.log")"
  rm -rf "$dir"
}

psdone_run() {
  local dir flags ps_pid chief worker1 t0 t1 chief_exit worker1_exit ps_exit
  dir=$(mktemp -d)
  job_flags "$dir" 50
  "$bin" --job_name=ps --task_index=0 "${flags[@]}" >"$dir/ps.log" 2>&1 &
  ps_pid=$!
  "$bin" --job_name=worker --task_index=0 "${flags[@]}" >"$dir/chief.log" 2>&1 &
  chief=$!
  "$bin" --job_name=worker --task_index=1 "${flags[@]}" >"$dir/worker1.log" 2>&1 &
  worker1=$!
  until grep -q "progress step=" "$dir/chief.log"; do sleep 0.01; done
  kill -STOP "$chief"
  until grep -q "stopped at global_step" "$dir/worker1.log"; do sleep 0.02; done
  sleep 0.5  # its report follows at once
  kill -9 "$ps_pid"
  wait "$ps_pid" 2>/dev/null
  "$bin" --job_name=ps --task_index=0 "${flags[@]}" >"$dir/ps2.log" 2>&1 &
  ps_pid=$!
  t0=$(now)
  kill -CONT "$chief"
  wait "$chief"
  chief_exit=$?
  t1=$(now)
  wait "$worker1"
  worker1_exit=$?
  wait "$ps_pid"
  ps_exit=$?
  echo "chief exit $chief_exit $(seconds "$t0" "$t1") s after the ps restart; worker 1 exit" \
    "$worker1_exit; ps exit $ps_exit; gave up waiting:" \
    "$(grep -c 'ending the job anyway' "$dir/chief.log")"
  rm -rf "$dir"
}

for ((i = 1; i <= runs; ++i)); do
  case "$mode" in
    master) master_run ;;
    chief) chief_run ;;
    psdone) psdone_run ;;
    *) echo "unknown mode '$mode': use master, chief or psdone" >&2; exit 2 ;;
  esac
done

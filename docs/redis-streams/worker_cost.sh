#!/usr/bin/env bash
# The worker process's cost per drained job, in instructions (valgrind's callgrind counts
# instructions, not seconds: the same for the same build whatever else the machine does).
# W2 enqueues N jobs and drains them; W1b only enqueues them; the difference over N is what
# draining one job costs the process (fetch, decode, run, complete).
#
#   cargo build --release --example bench --features postgres,redis
#   docs/redis-streams/worker_cost.sh target/release/examples/bench --backend redis --layout streams
#
# The bench's options after the binary choose the store. Allocations are not counted here;
# `callgrind_annotate --inclusive=yes --tree=caller` on the files it leaves shows who calls
# `__rust_alloc` and how often.
set -euo pipefail
bench=$1
shift
out=$(mktemp -d)
n=20000
for workload in W1b W2; do
    valgrind --tool=callgrind --callgrind-out-file="$out/$workload.out" \
        "$bench" "$@" --no-ceilings -n "$n" --workload "$workload" > /dev/null 2> "$out/$workload.log"
done
total() { grep '^totals:' "$out/$1.out" | awk '{print $2}'; }
echo "instructions per drained job: $(( ($(total W2) - $(total W1b)) / n ))"
echo "callgrind files: $out"

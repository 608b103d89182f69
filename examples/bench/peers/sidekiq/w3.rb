# Sidekiq under the benchmark protocol's W3 (../../../../shared/bench/PROTOCOL.md): one idle,
# warm server process of concurrency 16 (job.rb), and this process enqueueing 2,000 jobs at
# 200/s with `Sidekiq::Client.push`; each job's pickup latency is the start of its handler less
# its enqueue time `t`. Redis db 5, which it flushes first.
#
#   apt-get install ruby-sidekiq && ruby w3.rb [N]
#
# Prints one JSON line, as the bench does: p50, p99 and max in ms.
require "json"
require_relative "job"

n = (ARGV[0] || 2000).to_i
Sidekiq.redis(&:flushdb)
server = spawn("sidekiq", "-r", File.join(__dir__, "job.rb"), "-c", "16", "-q", "email",
               out: File::NULL, err: File::NULL)
begin
  # Warm: one job through, then the server is idle again.
  SendWelcomeEmail.perform_async(0, "warm@example.com", now_us)
  sleep 0.05 until Sidekiq.redis { |r| r.llen("bench:w3") } == 1
  Sidekiq.redis { |r| r.del("bench:w3") }
  sleep 1
  started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  n.times do |i|
    due = started + i * 0.005
    pause = due - Process.clock_gettime(Process::CLOCK_MONOTONIC)
    sleep pause if pause > 0
    SendWelcomeEmail.perform_async(i, "user#{i}@example.com", now_us)
  end
  sleep 0.05 until Sidekiq.redis { |r| r.llen("bench:w3") } == n
  latencies = Sidekiq.redis { |r| r.lrange("bench:w3", 0, -1) }.map(&:to_i).sort
  # As the bench reads them: the sample at (n - 1) * q, rounded.
  at = ->(q) { latencies[((n - 1) * q).round] / 1000.0 }
  puts JSON.generate(system: "sidekiq", version: Sidekiq::VERSION, backend: "redis", workload: "W3",
                     n: n, concurrency: 16, p50_ms: at.(0.5), p99_ms: at.(0.99),
                     max_ms: latencies.last / 1000.0, notes: "perform_async at 200/s, one server process")
ensure
  Process.kill("TERM", server)
  Process.wait(server)
end

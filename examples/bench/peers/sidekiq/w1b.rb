# Sidekiq under the benchmark protocol's W1b (../../../../shared/bench/PROTOCOL.md): N jobs of
# queue `email` enqueued in batches of 1,000 through `push_bulk`, from one client; jobs/s. Jobs
# carry the protocol's payload as their arguments and 3 retries. Redis db 5, which it flushes
# first.
#
#   apt-get install ruby-sidekiq && ruby w1b.rb [N]
#
# Prints one JSON line, as the bench does.
require "json"
require_relative "job"

n = (ARGV[0] || 20_000).to_i

Sidekiq.redis(&:flushdb)
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
(0...n).step(1000) do |first|
  args = (first...[first + 1000, n].min).map { |i| [i, "user#{i}@example.com", now_us] }
  Sidekiq::Client.push_bulk("class" => SendWelcomeEmail, "args" => args)
end
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
puts JSON.generate(system: "sidekiq", version: Sidekiq::VERSION, backend: "redis", workload: "W1b",
                   n: n, jobs_per_s: (n / seconds).round(1), notes: "push_bulk, batches of 1,000")

# The protocol's job as a Sidekiq job, and the Redis db 5 that w1b.rb, w3.rb and the server
# process w3.rb starts (`sidekiq -r ./job.rb`) all use. A run records its pickup latency,
# now - t (µs), in the list `bench:w3` (W3 reads it; W1b runs no job).
require "sidekiq"

Redis.sadd_returns_boolean = false

Sidekiq.configure_server { |config| config.redis = { url: "redis://127.0.0.1:6379/5" } }
Sidekiq.configure_client { |config| config.redis = { url: "redis://127.0.0.1:6379/5" } }

# Now, in µs since the epoch: the jobs' `t`.
def now_us = Process.clock_gettime(Process::CLOCK_REALTIME, :microsecond)

class SendWelcomeEmail
  include Sidekiq::Worker
  sidekiq_options queue: "email", retry: 3

  def perform(_user_id, _email, t)
    latency = now_us - t
    Sidekiq.redis { |r| r.rpush("bench:w3", latency) }
  end
end

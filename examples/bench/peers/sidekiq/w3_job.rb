# The job of w3.rb, which its Sidekiq server process loads (`sidekiq -r ./w3_job.rb`): it records
# its pickup latency, now - t (µs), in the list `bench:w3`.
require "sidekiq"

Redis.sadd_returns_boolean = false

Sidekiq.configure_server { |config| config.redis = { url: "redis://127.0.0.1:6379/5" } }
Sidekiq.configure_client { |config| config.redis = { url: "redis://127.0.0.1:6379/5" } }

class SendWelcomeEmail
  include Sidekiq::Worker
  sidekiq_options queue: "email", retry: 3

  def perform(_user_id, _email, t)
    latency = Process.clock_gettime(Process::CLOCK_REALTIME, :microsecond) - t
    Sidekiq.redis { |r| r.rpush("bench:w3", latency) }
  end
end

-- Ends the deliveries to a stopping worker: withdraws worker ARGV[4]'s offer (see idle.lua),
-- then publishes `{"w": worker, "q": queue}` on its delivery channel ARGV[5]. Every job
-- delivered to it before was published on that channel before this mark, so once the worker
-- hears the mark, it holds every job of the queue leased to it straight away.
withdraw(ARGV[4])
redis.call('PUBLISH', ARGV[5], cjson.encode({ w = ARGV[4], q = QUEUE }))
return 1

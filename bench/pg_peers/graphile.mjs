// One process of bench/run_pg_peers for graphile-worker, speaking
// bench/pg_bench's protocol: prints "ready" once its runner is up, waits
// for GO_FILE, prints "done <seconds from go to the end> <CPU seconds
// meanwhile>".
//
//   node graphile.mjs MODE URL CONCURRENCY N GO_FILE
//
// MODE:
//   window  adds N jobs (task "bench", a no-op), at most 1,000 of them
//           not yet completed, with addJobs for every free place at once
//           (one call in flight); ends once all N completed and the queue
//           is empty (checked whenever none of its jobs runs). A
//           graphile-worker client cannot wait for its own jobs, so each
//           process counts the completions of other processes' jobs it
//           ran and sends them as NOTIFY bench_done {pid: count} (one
//           statement in flight, as the pool notifies finished ids).
//   fill    adds N jobs with addJobs, 1,000 per call, and exits; prints
//           "filled <seconds>".
//   drain   starts its runner with the task held until go (the runner has
//           fetched its first local batch by then), ends once the queue
//           is empty.
// The runner uses graphile-worker's documented fast settings
// (worker.graphile.org/docs/performance): localQueue of 500 jobs and
// batched completion (completeJobBatchDelay = failJobBatchDelay = 0),
// concurrentJobs = CONCURRENCY, maxPoolSize = max(10, CONCURRENCY + 2).
// graphile-worker comes from PEERS_NODE_MODULES (installed at run time).
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

const [mode, url, concurrencyArg, nArg, go] = process.argv.slice(2);
const concurrency = Number(concurrencyArg);
const n = Number(nArg);
const require = createRequire(`${process.env.PEERS_NODE_MODULES}/`);
const { run, makeWorkerUtils, Logger } = require("graphile-worker");
const pg = require("pg");
const me = process.pid;
const quiet = new Logger(() => () => {});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const jobs = (count) =>
  Array.from({ length: count }, (_, i) => ({ identifier: "bench", payload: { p: me, i } }));

const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
if (mode === "fill") {
  await utils.migrate();
  const start = process.hrtime.bigint();
  for (let added = 0; added < n; added += 1000)
    await utils.addJobs(jobs(Math.min(1000, n - added)));
  console.log(`filled ${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(6)}`);
  await utils.release();
  process.exit(0);
}

let open = mode !== "drain";
let release;
const gate = new Promise((resolve) => (release = resolve));
const runner = await run({
  connectionString: url,
  concurrency,
  maxPoolSize: Math.max(10, concurrency + 2),
  noHandleSignals: true,
  logger: quiet,
  preset: {
    worker: {
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  },
  taskList: {
    bench: async () => {
      if (!open) await gate;
    },
  },
});
// Counted when a task returns: graphile-worker emits job:complete before
// its batched completion is written (the end waits for the writes).
let running = 0;
let ownDone = 0;
let wake = null;
const woken = () => {
  if (wake) wake();
  wake = null;
};
const others = new pg.Client({ connectionString: url });
let pending = {};
let sending = false;
const send = async () => {
  sending = true;
  while (Object.keys(pending).length > 0) {
    const counts = pending;
    pending = {};
    await others.query("SELECT pg_notify('bench_done', $1)", [JSON.stringify(counts)]);
  }
  sending = false;
};
if (mode === "window") {
  await others.connect();
  others.on("notification", (msg) => {
    ownDone += JSON.parse(msg.payload)[me] ?? 0;
    woken();
  });
  await others.query("LISTEN bench_done");
}
runner.events.on("job:start", () => ++running);
runner.events.on("job:complete", ({ job }) => {
  --running;
  if (job.payload.p === me) {
    ++ownDone;
    woken();
  } else if (mode === "window") {
    pending[job.payload.p] = (pending[job.payload.p] ?? 0) + 1;
    if (!sending) send();
  }
});

console.log("ready");
while (!existsSync(go)) await sleep(0.2);
const start = process.hrtime.bigint();
const cpu = process.cpuUsage();
open = true;
release();

if (mode === "window") {
  let added = 0;
  while (ownDone < n) {
    const room = Math.min(n - added, 1000 - (added - ownDone));
    if (room > 0) {
      await utils.addJobs(jobs(room));
      added += room;
    } else {
      await new Promise((resolve) => (wake = resolve));
    }
  }
}
// The end: no job of this process runs, and none is left in the queue.
for (;;) {
  if (running === 0) {
    const { rows } = await utils.withPgClient((client) =>
      client.query("SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs)"),
    );
    if (!rows[0].exists) break;
  }
  await sleep(running === 0 ? 5 : 2);
}
const used = process.cpuUsage(cpu);
const took = Number(process.hrtime.bigint() - start) / 1e9;
console.log(`done ${took.toFixed(6)} ${((used.user + used.system) / 1e6).toFixed(6)}`);
await runner.stop();
await utils.release();
if (mode === "window") await others.end();
process.exit(0);

// One benchmark worker process. Protocol (IPC): parent sends the config; the worker sets up, warms
// up, answers { ready }; parent sends { go, until } (epoch ms); the worker runs ops until then and
// answers { done, ops, startedAt, endedAt, cpuUs }, then on { close } closes and answers { closed }.
// cpuUs is the CPU time this process used in the window (user + system): per-op work that does not
// depend on how busy the machine is, unlike ops/s.
// A config { mix: [cfg, …] } sets up several workloads in this one process and runs them in turns of
// BATCH ops until the window ends; it answers { done, spent: [{ ops, ms, cpuUs }, …] }, one per workload.
import { setupWorkload } from './workloads.mjs';

// Set by bench.mjs (--warmup); 200 when the worker runs on its own.
const WARMUP_OPS = Number(process.env.BENCH_WARMUP_OPS ?? 200);

/**
 * Turns of a few ops each: a swing of the machine's load (a shared disk's fsync latency changes within
 * seconds) then falls on every workload alike, as it cannot when each has its own window.
 */
const BATCH = 20;
const now = () => performance.timeOrigin + performance.now();

async function runMixed(cfgs) {
  const works = [];
  for (const cfg of cfgs) works.push(await setupWorkload(cfg));
  const next = works.map(() => 0);
  for (const [k, w] of works.entries()) for (; next[k] < WARMUP_OPS; next[k]++) await w.op(next[k]);
  process.send({ ready: true });
  const go = await new Promise((resolve) => process.once('message', resolve));
  const spent = works.map(() => ({ ops: 0, ms: 0, cpuUs: 0 }));
  while (now() < go.until) {
    for (const [k, w] of works.entries()) {
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      for (let j = 0; j < BATCH; j++) await w.op(next[k]++);
      const cpu = process.cpuUsage(cpu0);
      spent[k].ms += performance.now() - t0;
      spent[k].cpuUs += cpu.user + cpu.system;
      spent[k].ops += BATCH;
    }
  }
  process.send({ done: true, spent });
  await new Promise((resolve) => process.once('message', resolve));
  for (const w of works) await w.close();
}

process.once('message', async (cfg) => {
  try {
    if (cfg.mix) {
      await runMixed(cfg.mix);
      process.send({ closed: true }, () => process.exit(0));
      return;
    }
    const w = await setupWorkload(cfg);
    let i = 0;
    for (; i < WARMUP_OPS; i++) await w.op(i);
    process.send({ ready: true });
    const go = await new Promise((resolve) => process.once('message', resolve));
    const cpu0 = process.cpuUsage();
    const startedAt = now();
    let ops = 0;
    while (now() < go.until) {
      await w.op(i++);
      ops++;
    }
    const endedAt = now();
    const cpu = process.cpuUsage(cpu0);
    // Reported before closing: the parent reads the PostgreSQL server's CPU while this worker's backends
    // still run (a backend that exits takes its counters with it), then says close.
    process.send({ done: true, ops, startedAt, endedAt, cpuUs: cpu.user + cpu.system });
    await new Promise((resolve) => process.once('message', resolve));
    await w.close();
    process.send({ closed: true }, () => process.exit(0));
  } catch (err) {
    process.send({ error: String(err?.stack ?? err) }, () => process.exit(1));
  }
});

// One benchmark worker process. Protocol (IPC): parent sends the config; the worker sets up, warms
// up, answers { ready }; parent sends { go, until } (epoch ms); the worker runs ops until then and
// answers { done, ops, startedAt, endedAt, cpuUs }, then on { close } closes and answers { closed }.
// cpuUs is the CPU time this process used in the window (user + system): per-op work that does not
// depend on how busy the machine is, unlike ops/s.
import { setupWorkload } from './workloads.mjs';

// Set by bench.mjs (--warmup); 200 when the worker runs on its own.
const WARMUP_OPS = Number(process.env.BENCH_WARMUP_OPS ?? 200);

process.once('message', async (cfg) => {
  try {
    const w = await setupWorkload(cfg);
    let i = 0;
    for (; i < WARMUP_OPS; i++) await w.op(i);
    process.send({ ready: true });
    const go = await new Promise((resolve) => process.once('message', resolve));
    const cpu0 = process.cpuUsage();
    const startedAt = performance.timeOrigin + performance.now();
    let ops = 0;
    while (performance.timeOrigin + performance.now() < go.until) {
      await w.op(i++);
      ops++;
    }
    const endedAt = performance.timeOrigin + performance.now();
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

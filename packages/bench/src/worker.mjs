// One benchmark worker process. Protocol (IPC): parent sends { mix: [cfg, …], sliceMs }; the worker sets
// up every workload, warms each up, answers { ready }; parent sends { go, start, until } (epoch ms); the
// worker runs ops until `until`, the workload of each op chosen by the wall clock (below), and answers
// { done, spent: [{ ops, ms, cpuUs }, …] } (one per workload: its ops, the time and the CPU, user +
// system, they took); then on { close } closes and answers { closed }.
import { setupWorkload } from './workloads.mjs';

// Set by bench.mjs (--warmup); 200 when the worker runs on its own.
const WARMUP_OPS = Number(process.env.BENCH_WARMUP_OPS ?? 200);
const now = () => performance.timeOrigin + performance.now();
const message = () => new Promise((resolve) => process.once('message', resolve));

/**
 * The workloads take turns by the wall clock: slice s (of `sliceMs`, counted from `start`) belongs to
 * workload s mod n in every worker at once, so all workers run the same workload together (their
 * contention in the server is that workload's), and a swing of the machine's load (the shared disk's
 * fsync latency changes within seconds) falls on every workload alike, as it cannot when each has its
 * own window.
 */
async function run(works, sliceMs, start, until) {
  const next = works.map(() => WARMUP_OPS);
  const spent = works.map(() => ({ ops: 0, ms: 0, cpuUs: 0 }));
  for (let t = now(); t < until; t = now()) {
    // The parent's Date.now() and this process's performance clock can be a millisecond apart: before `start`
    // is slice 0, not slice -1.
    const k = Math.floor(Math.max(0, t - start) / sliceMs) % works.length;
    const cpu0 = process.cpuUsage();
    await works[k].op(next[k]++);
    const cpu = process.cpuUsage(cpu0);
    spent[k].ops++;
    spent[k].ms += now() - t;
    spent[k].cpuUs += cpu.user + cpu.system;
  }
  return spent;
}

process.once('message', async ({ mix, sliceMs }) => {
  try {
    const works = [];
    for (const cfg of mix) works.push(await setupWorkload(cfg));
    for (const w of works) for (let i = 0; i < WARMUP_OPS; i++) await w.op(i);
    process.send({ ready: true });
    const go = await message();
    process.send({ done: true, spent: await run(works, sliceMs, go.start, go.until) });
    await message();
    for (const w of works) await w.close();
    process.send({ closed: true }, () => process.exit(0));
  } catch (err) {
    process.send({ error: String(err?.stack ?? err) }, () => process.exit(1));
  }
});

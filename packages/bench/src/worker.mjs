// One benchmark worker process. Protocol (IPC): parent sends the config; the worker sets up, warms
// up, answers { ready }; parent sends { go, until } (epoch ms); the worker runs ops until then and
// answers { done, ops, startedAt, endedAt }.
import { setupWorkload } from './workloads.mjs';

const WARMUP_OPS = 200;

process.once('message', async (cfg) => {
  try {
    const w = await setupWorkload(cfg);
    let i = 0;
    for (; i < WARMUP_OPS; i++) await w.op(i);
    process.send({ ready: true });
    const go = await new Promise((resolve) => process.once('message', resolve));
    const startedAt = performance.timeOrigin + performance.now();
    let ops = 0;
    while (performance.timeOrigin + performance.now() < go.until) {
      await w.op(i++);
      ops++;
    }
    const endedAt = performance.timeOrigin + performance.now();
    await w.close();
    process.send({ done: true, ops, startedAt, endedAt }, () => process.exit(0));
  } catch (err) {
    process.send({ error: String(err?.stack ?? err) }, () => process.exit(1));
  }
});

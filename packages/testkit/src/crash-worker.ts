// The crash drill's child process. `run`: each job stops dead at its point and tells the parent, which SIGKILLs it.
// `recover`: recover() on the same ledger, then every job again as its caller would, reporting where each ended.
import { pathToFileURL } from 'node:url';
import type { AdapterV1, Ledger } from '@retrysafe/contract';
import { createRunner, systemClock } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import type { CrashPoint, CrashWorkerConfig } from './crash-drill.js';
import { wrapAdapter } from './wrap-adapter.js';

/** What this process tells the parent: a job reached its point or finished; recovery's results; its own failure. */
export type CrashWorkerMessage =
  | { readonly type: 'at'; readonly index: number; readonly point: CrashPoint }
  | { readonly type: 'finished'; readonly index: number }
  | Awaited<ReturnType<typeof recoverJobs>>
  | { readonly type: 'error'; readonly message: string };
type Runner = ReturnType<typeof createRunner>;
/** Stops the job at `point` when that is its point: tells the parent, then never returns. */
type StopIf = (businessOperationId: string, point: CrashPoint) => Promise<void>;

// runCrashDrill always forks this with an IPC channel and the config in RETRYSAFE_CRASH_WORKER.
const send = (msg: CrashWorkerMessage) => new Promise<void>((resolve) => process.send!(msg, () => resolve()));

function stopperFor(cfg: CrashWorkerConfig): StopIf {
  const jobs = new Map(cfg.jobs.map((j) => [j.businessOperationId, j]));
  return async (id, point) => {
    const job = jobs.get(id);
    if (cfg.mode !== 'run' || job?.point !== point) return;
    // Keeps the event loop alive while the job is stopped: an idle process would exit 0 before the kill lands.
    setInterval(() => {}, 1 << 30);
    // A parent that is gone (its test timed out, it crashed) sends no kill: the job must not stay parked for ever.
    process.once('disconnect', () => process.exit(1));
    await send({ type: 'at', index: job.index, point });
    await new Promise<never>(() => {});
  };
}

/** The ledger, stopping a job right after the writes that end at a crash point (the crash drill's ledgers are plain objects, so a spread keeps every method). */
function hookLedger(ledger: Ledger, stopIf: StopIf): Ledger {
  return {
    ...ledger,
    async claim(input) {
      const r = await ledger.claim(input);
      if (r.kind !== 'claimed') return r;
      await stopIf(r.record.businessOperationId, 'after-claim');
      // A claim that creates the operation already `dispatched` is the durable dispatched write.
      if (!r.takenOver && r.record.state === 'dispatched') await stopIf(input.businessOperationId, 'after-dispatched');
      return r;
    },
    async markDispatched(ref, now) {
      const r = await ledger.markDispatched(ref, now);
      await stopIf(r.businessOperationId, 'after-dispatched');
      return r;
    },
    async setState(ref, patch) {
      const r = await ledger.setState(ref, patch);
      if (r.state === 'succeeded') await stopIf(r.businessOperationId, 'after-result-recorded');
      return r;
    },
  };
}

/** The adapter, stopping a job once the provider answered (it committed unless it refused). */
function hookAdapter(adapter: AdapterV1, stopIf: StopIf): AdapterV1 {
  return wrapAdapter(adapter, {
    async doExecute(op, params, ctx) {
      const outcome = await adapter.doExecute(op, params, ctx);
      if (outcome.kind !== 'rejected' && outcome.kind !== 'not-applied')
        await stopIf(ctx.businessOperationId, 'after-provider-committed');
      return outcome;
    },
    doLookup: (op, ctx) => adapter.doLookup(op, ctx),
  });
}

/** recover(), then every caller calls again (same id, same params), concurrently, as callers would. */
async function recoverJobs(cfg: CrashWorkerConfig, runner: Runner, adapter: AdapterV1, ledger: Ledger) {
  const reports = await runner.recover({ adapters: [adapter] });
  const results = await Promise.all(
    cfg.jobs.map(async ({ index, params, businessOperationId }) => {
      const r = await runner.run(adapter, cfg.operation, { params, businessOperationId });
      const providerKey = (await ledger.get(r.businessOperationId))?.providerKey ?? null;
      const adopted = r.status === 'done' ? r.adopted : false;
      return { index, businessOperationId: r.businessOperationId, status: r.status, adopted, providerKey };
    }),
  );
  return { type: 'recovered' as const, reports, results };
}

async function main(): Promise<void> {
  const cfg = JSON.parse(process.env.RETRYSAFE_CRASH_WORKER!) as CrashWorkerConfig;
  const stopIf = stopperFor(cfg);
  type Module = { createAdapter?: (o: unknown) => AdapterV1 | Promise<AdapterV1> };
  const { createAdapter } = (await import(pathToFileURL(cfg.adapterModule).href)) as Module;
  if (typeof createAdapter !== 'function')
    throw new Error(`crash worker: ${cfg.adapterModule} does not export createAdapter`);
  const adapter = await createAdapter({ baseUrl: cfg.baseUrl, timeoutMs: cfg.timeoutMs, options: cfg.adapterOptions });
  // The recovering process's clock runs past the dead workers' leases, so it may take them over.
  const skew = cfg.mode === 'recover' ? cfg.leaseMs + 1_000 : 0;
  const ledger = createSqliteLedger({ path: cfg.ledgerPath });
  const runner = createRunner({
    ledger: hookLedger(ledger, stopIf),
    clock: { ...systemClock, now: () => Date.now() + skew },
    policy: { leaseMs: cfg.leaseMs },
    owner: `crash-${cfg.mode}-${process.pid}`,
  });
  if (cfg.mode === 'recover') await send(await recoverJobs(cfg, runner, adapter, ledger));
  else {
    // Every job runs at once; the ones that stop at their point never finish.
    const hooked = hookAdapter(adapter, stopIf);
    const run = async ({ index, params, businessOperationId }: CrashWorkerConfig['jobs'][number]) => {
      await runner.run(hooked, cfg.operation, { params, businessOperationId });
      await send({ type: 'finished', index });
    };
    await Promise.all(cfg.jobs.map(run));
  }
  await ledger.close();
  await adapter.close?.();
  process.exit(0);
}

main().catch(async (err: unknown) => {
  await send({ type: 'error', message: (err as Error)?.stack ?? String(err) });
  process.exit(1);
});

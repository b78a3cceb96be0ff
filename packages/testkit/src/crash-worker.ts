/**
 * The crash drill's child process (run by `runCrashDrill` with `node dist/crash-worker.js`).
 * mode `run`: runs one operation and, at the named point, tells the parent and stops dead (the parent
 * SIGKILLs it). mode `recover`: a fresh process that runs `runner.recover()` on the same SQLite
 * ledger, then re-runs every job as its caller would (same params ⇒ same business operation) and
 * reports where each ended.
 */
import { pathToFileURL } from 'node:url';
import type { AdapterV1, Ledger } from '@retrysafe/contract';
import { createRunner, createSqliteLedger } from '@retrysafe/core';
import type { CrashPoint, CrashWorkerConfig, CrashWorkerMessage } from './crash-types.js';

function send(msg: CrashWorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(JSON.stringify(msg) + '\n');
      resolve();
      return;
    }
    process.send(msg, () => resolve());
  });
}

function readConfig(): CrashWorkerConfig {
  const raw = process.env['RETRYSAFE_CRASH_WORKER'];
  if (!raw) throw new Error('crash worker: RETRYSAFE_CRASH_WORKER is not set');
  return JSON.parse(raw) as CrashWorkerConfig;
}

/** Tells the parent where we are, then never returns: the parent kills this process with SIGKILL. */
async function stopAt(point: CrashPoint, businessOperationId: string | undefined): Promise<never> {
  await send({ type: 'at', point, ...(businessOperationId ? { businessOperationId } : {}) });
  return new Promise<never>(() => {});
}

function hookLedger(ledger: Ledger, point: CrashPoint | null): Ledger {
  if (point === null) return ledger;
  return new Proxy(ledger, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => Promise<unknown>;
      if (prop === 'claim' && point === 'after-claim') {
        return async (...args: unknown[]) => {
          const r = (await fn.apply(target, args)) as { kind: string; record: { businessOperationId: string } };
          if (r.kind === 'claimed') await stopAt(point, r.record.businessOperationId);
          return r;
        };
      }
      if (prop === 'markDispatched' && point === 'after-dispatched') {
        return async (...args: unknown[]) => {
          const r = (await fn.apply(target, args)) as { businessOperationId: string };
          await stopAt(point, r.businessOperationId);
          return r;
        };
      }
      if (prop === 'setState' && point === 'after-result-recorded') {
        return async (...args: unknown[]) => {
          const r = (await fn.apply(target, args)) as { businessOperationId: string; state: string };
          if (r.state === 'succeeded') await stopAt(point, r.businessOperationId);
          return r;
        };
      }
      return fn.bind(target);
    },
  });
}

function hookAdapter(adapter: AdapterV1, point: CrashPoint | null): AdapterV1 {
  if (point !== 'after-provider-committed') return adapter;
  return {
    specificationVersion: adapter.specificationVersion,
    provider: adapter.provider,
    operations: adapter.operations,
    deriveProviderKey: (op, id) => adapter.deriveProviderKey(op, id),
    async doExecute(op, params, ctx) {
      const outcome = await adapter.doExecute(op, params, ctx);
      // The provider answered (committed unless it refused): die before the runner records anything.
      if (outcome.kind === 'succeeded' || outcome.kind === 'replayed' || outcome.kind === 'in-progress') await stopAt(point, ctx.businessOperationId);
      return outcome;
    },
    doLookup: (op, ctx) => adapter.doLookup(op, ctx),
  };
}

async function main(): Promise<void> {
  const cfg = readConfig();
  const mod = (await import(pathToFileURL(cfg.adapterModule).href)) as { createAdapter?: (o: unknown) => AdapterV1 | Promise<AdapterV1> };
  if (typeof mod.createAdapter !== 'function') throw new Error(`crash worker: ${cfg.adapterModule} does not export createAdapter`);
  const adapter = await mod.createAdapter({ baseUrl: cfg.baseUrl, timeoutMs: cfg.timeoutMs, options: cfg.adapterOptions });
  const skew = cfg.clockSkewMs ?? 0;
  const clock = { now: () => Date.now() + skew, sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms))) };
  const baseLedger = createSqliteLedger({ path: cfg.ledgerPath });
  const point = cfg.mode === 'run' ? cfg.point : null;
  const ledger = hookLedger(baseLedger, point);
  const runner = createRunner({ ledger, clock, policy: { leaseMs: cfg.leaseMs, ...(cfg.policy ?? {}) }, owner: `crash-${cfg.mode}-${process.pid}` });
  const hooked = hookAdapter(adapter, point);

  if (cfg.mode === 'run') {
    const job = cfg.jobs[0]!;
    const r = await runner.run(hooked, cfg.operation, { params: job.params });
    await send({ type: 'finished', status: r.status, businessOperationId: r.businessOperationId });
  } else {
    const reports = await runner.recover({ adapters: [adapter] });
    const results: Extract<CrashWorkerMessage, { type: 'recovered' }>['results'][number][] = [];
    for (const job of cfg.jobs) {
      const r = await runner.run(adapter, cfg.operation, { params: job.params });
      const rec = await baseLedger.get(r.businessOperationId);
      results.push({
        index: job.index,
        businessOperationId: r.businessOperationId,
        status: r.status,
        adopted: r.status === 'done' ? Boolean((r as { adopted?: boolean }).adopted) : false,
        providerRef: rec?.providerRef ?? null,
        providerKey: rec?.providerKey ?? null,
        state: rec?.state ?? null,
        attemptCount: rec?.attemptCount ?? 0,
      });
    }
    await send({ type: 'recovered', reports: reports.map((x: { businessOperationId: string; from: string; to: string; action: string }) => ({ businessOperationId: x.businessOperationId, from: x.from, to: x.to, action: x.action })), results });
  }
  await baseLedger.close();
  await adapter.close?.();
  process.exit(0);
}

main().catch(async (err: unknown) => {
  await send({ type: 'error', message: (err as Error)?.stack ?? String(err) });
  process.exit(1);
});

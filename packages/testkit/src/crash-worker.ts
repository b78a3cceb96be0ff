/**
 * The crash drill's child process (run by `runCrashDrill` as `node dist/crash-worker.js`).
 * mode `run`: runs its jobs (distinct business operations) concurrently; each stops dead at its own
 * named point and tells the parent, which SIGKILLs the process once every job has stopped.
 * mode `recover`: a fresh process that runs `runner.recover()` on the same SQLite ledger, then
 * re-runs every job as its caller would (same business-operation id and params) and reports where
 * each ended.
 */
import { pathToFileURL } from 'node:url';
import type { AdapterV1, Ledger } from '@retrysafe/contract';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
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

// Keeps the event loop alive while jobs are stopped: an idle process would exit 0 before the kill lands.
let keepAlive: NodeJS.Timeout | undefined;

function main(): Promise<void> {
  const cfg = readConfig();
  const points = new Map<string, { index: number; point: CrashPoint | null }>(
    cfg.jobs.map((j) => [j.businessOperationId, { index: j.index, point: j.point }]),
  );

  /** Tells the parent this job reached its point, then never returns: the process is SIGKILLed. */
  async function stopAt(id: string, point: CrashPoint): Promise<never> {
    keepAlive ??= setInterval(() => {}, 1 << 30);
    await send({ type: 'at', index: points.get(id)!.index, point, businessOperationId: id });
    return new Promise<never>(() => {});
  }
  const wants = (id: string, point: CrashPoint) => cfg.mode === 'run' && points.get(id)?.point === point;

  function hookLedger(ledger: Ledger): Ledger {
    return new Proxy(ledger, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const fn = value as (...args: unknown[]) => Promise<unknown>;
        if (prop === 'claim') {
          return async (...args: unknown[]) => {
            const r = (await fn.apply(target, args)) as {
              kind: string;
              takenOver?: boolean;
              record: { businessOperationId: string; state: string };
            };
            if (r.kind === 'claimed' && wants(r.record.businessOperationId, 'after-claim'))
              await stopAt(r.record.businessOperationId, 'after-claim');
            // A ledger with capabilities.claimDispatch creates a new operation already `dispatched`: the
            // claim is then the durable dispatched write, so "after dispatched" is right after it.
            if (
              r.kind === 'claimed' &&
              !r.takenOver &&
              r.record.state === 'dispatched' &&
              wants(r.record.businessOperationId, 'after-dispatched')
            ) {
              await stopAt(r.record.businessOperationId, 'after-dispatched');
            }
            return r;
          };
        }
        if (prop === 'markDispatched') {
          return async (...args: unknown[]) => {
            const r = (await fn.apply(target, args)) as { businessOperationId: string };
            if (wants(r.businessOperationId, 'after-dispatched'))
              await stopAt(r.businessOperationId, 'after-dispatched');
            return r;
          };
        }
        if (prop === 'setState') {
          return async (...args: unknown[]) => {
            const r = (await fn.apply(target, args)) as { businessOperationId: string; state: string };
            if (r.state === 'succeeded' && wants(r.businessOperationId, 'after-result-recorded'))
              await stopAt(r.businessOperationId, 'after-result-recorded');
            return r;
          };
        }
        return fn.bind(target);
      },
    });
  }

  function hookAdapter(adapter: AdapterV1): AdapterV1 {
    return {
      specificationVersion: adapter.specificationVersion,
      provider: adapter.provider,
      operations: adapter.operations,
      deriveProviderKey: (op, id) => adapter.deriveProviderKey(op, id),
      async doExecute(op, params, ctx) {
        const outcome = await adapter.doExecute(op, params, ctx);
        // The provider answered (it committed unless it refused): die before the runner records anything.
        if (
          outcome.kind !== 'rejected' &&
          outcome.kind !== 'not-applied' &&
          wants(ctx.businessOperationId, 'after-provider-committed')
        ) {
          await stopAt(ctx.businessOperationId, 'after-provider-committed');
        }
        return outcome;
      },
      doLookup: (op, ctx) => adapter.doLookup(op, ctx),
    };
  }

  return (async () => {
    const mod = (await import(pathToFileURL(cfg.adapterModule).href)) as {
      createAdapter?: (o: unknown) => AdapterV1 | Promise<AdapterV1>;
    };
    if (typeof mod.createAdapter !== 'function')
      throw new Error(`crash worker: ${cfg.adapterModule} does not export createAdapter`);
    const adapter = await mod.createAdapter({
      baseUrl: cfg.baseUrl,
      timeoutMs: cfg.timeoutMs,
      options: cfg.adapterOptions,
    });
    const skew = cfg.clockSkewMs ?? 0;
    const clock = {
      now: () => Date.now() + skew,
      sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms))),
    };
    const baseLedger = createSqliteLedger({ path: cfg.ledgerPath });
    const runner = createRunner({
      ledger: hookLedger(baseLedger),
      clock,
      policy: { leaseMs: cfg.leaseMs, ...(cfg.policy ?? {}) },
      owner: `crash-${cfg.mode}-${process.pid}`,
    });

    if (cfg.mode === 'run') {
      const hooked = hookAdapter(adapter);
      await Promise.all(
        cfg.jobs.map(async (job) => {
          const r = await runner.run(hooked, cfg.operation, {
            params: job.params,
            businessOperationId: job.businessOperationId,
          });
          await send({
            type: 'finished',
            index: job.index,
            status: r.status,
            businessOperationId: r.businessOperationId,
          });
        }),
      );
    } else {
      const reports = await runner.recover({ adapters: [adapter] });
      // every caller calls again (same id, same params), concurrently, as callers would
      const results = await Promise.all(
        cfg.jobs.map(async (job): Promise<Extract<CrashWorkerMessage, { type: 'recovered' }>['results'][number]> => {
          const r = await runner.run(adapter, cfg.operation, {
            params: job.params,
            businessOperationId: job.businessOperationId,
          });
          const rec = await baseLedger.get(r.businessOperationId);
          return {
            index: job.index,
            businessOperationId: r.businessOperationId,
            status: r.status,
            adopted: r.status === 'done' ? r.adopted : false,
            providerRef: rec?.providerRef ?? null,
            providerKey: rec?.providerKey ?? null,
            state: rec?.state ?? null,
            attemptCount: rec?.attemptCount ?? 0,
          };
        }),
      );
      await send({
        type: 'recovered',
        reports: reports.map((x) => ({
          businessOperationId: x.businessOperationId,
          from: x.from,
          to: x.to,
          action: x.action,
        })),
        results,
      });
    }
    await baseLedger.close();
    await adapter.close?.();
    process.exit(0);
  })();
}

main().catch(async (err: unknown) => {
  await send({ type: 'error', message: (err as Error)?.stack ?? String(err) });
  process.exit(1);
});

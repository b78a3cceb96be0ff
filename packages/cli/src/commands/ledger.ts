import { createRunner, jsonlHandoffSink, type ResolveResult } from '@retrysafe/core';
import { createAdapters, loadConfig, openLedger } from '@retrysafe/config';
import { asBusinessOperationId, type Ledger, type OperationRecord, type OperationState, type Receipt } from '@retrysafe/contract';
import { table } from '../output.js';
import { UsageError } from '../registry.js';

export interface LedgerTarget {
  /** SQLite file or postgres:// URL; default: the config's ledger, else ./retrysafe.db */
  readonly db?: string;
  readonly config?: string;
}

async function open(target: LedgerTarget): Promise<Ledger> {
  if (target.db) return openLedger(target.db);
  if (target.config) {
    const c = loadConfig(target.config);
    return openLedger(c.ledger, c.baseDir);
  }
  return openLedger('./retrysafe.db');
}

/** A record as shown to an operator: no params (they may hold PII), no stored result body. */
export function summarize(r: OperationRecord) {
  return {
    businessOperationId: r.businessOperationId,
    operation: r.operation,
    state: r.state,
    attempts: r.attemptCount,
    lastOutcome: r.lastOutcome,
    providerRef: r.providerRef,
    providerKey: r.providerKey,
    updatedAt: new Date(r.updatedAt).toISOString(),
    handoffReason: r.handoff?.reason ?? null,
  };
}

const STATES: readonly OperationState[] = ['claimed', 'dispatched', 'unknown', 'in-progress', 'reconciling', 'succeeded', 'rejected', 'handed-off', 'abandoned'];

export async function ledgerLs(target: LedgerTarget & { state?: string[]; limit?: number }) {
  for (const s of target.state ?? []) if (!STATES.includes(s as OperationState)) throw new UsageError(`--state ${s} is not a state (${STATES.join(', ')})`);
  const ledger = await open(target);
  try {
    const rows = await ledger.list({ ...(target.state?.length ? { states: target.state as OperationState[] } : {}), limit: target.limit ?? 100 });
    return rows.map(summarize);
  } finally {
    await ledger.close();
  }
}

export async function ledgerShow(target: LedgerTarget, id: string): Promise<{ record: ReturnType<typeof summarize> & { intentFingerprint: string; handoff: OperationRecord['handoff']; resolution: OperationRecord['resolution'] }; receipts: Receipt[] } | null> {
  const ledger = await open(target);
  try {
    const bid = asBusinessOperationId(id);
    const r = await ledger.get(bid);
    if (!r) return null;
    return { record: { ...summarize(r), intentFingerprint: r.intentFingerprint, handoff: r.handoff, resolution: r.resolution }, receipts: await ledger.receipts(bid) };
  } finally {
    await ledger.close();
  }
}

export async function ledgerHandoffs(target: LedgerTarget) {
  const ledger = await open(target);
  try {
    const rows = await ledger.list({ states: ['handed-off'], limit: 1000 });
    return rows.map((r) => ({ ...summarize(r), explanation: r.handoff?.explanation ?? '', safeNextActions: r.handoff?.safeNextActions ?? [] }));
  } finally {
    await ledger.close();
  }
}

export interface ResolveOptions extends LedgerTarget {
  readonly resume?: boolean;
  readonly markDone?: string;
  readonly abandon?: boolean;
  readonly by?: string;
}

/** Resolves a handed-off operation. `--resume` needs a config naming the adapter (credentials from env). */
export async function ledgerResolve(opts: ResolveOptions, id: string): Promise<ResolveResult> {
  const chosen = [opts.resume, opts.markDone !== undefined, opts.abandon].filter(Boolean).length;
  if (chosen !== 1) throw new UsageError('choose exactly one of --resume, --mark-done <providerRef>, --abandon');
  if (opts.resume && !opts.config) throw new UsageError('--resume re-sends through the adapter: pass --config <file> naming it (credentials come from environment variables)');
  const config = opts.config ? loadConfig(opts.config) : null;
  const ledger = await open(opts);
  try {
    const adapters = config && opts.resume ? Object.values(await createAdapters(config)) : [];
    const runner = createRunner({
      ledger,
      ...(config?.handoffs ? { handoff: jsonlHandoffSink(config.handoffs) } : {}),
      ...(config?.policy ? { policy: config.policy } : {}),
      ...(config?.redact ? { redact: { fields: [...(config.redact.fields ?? [])] } } : {}),
    });
    const by = opts.by ?? process.env.USER ?? 'operator';
    if (opts.resume) return await runner.resolve(id, { action: 'resume' }, { adapters, by });
    if (opts.markDone !== undefined) {
      if (!opts.markDone) throw new UsageError('--mark-done needs the provider reference of the effect you verified (e.g. pi_123)');
      return await runner.resolve(id, { action: 'mark-done', providerRef: opts.markDone }, { by });
    }
    return await runner.resolve(id, { action: 'abandon' }, { by });
  } finally {
    await ledger.close();
  }
}

export function lsTable(rows: ReturnType<typeof summarize>[]): string {
  if (rows.length === 0) return 'No operations.';
  return table(['business-operation id', 'state', 'attempts', 'last outcome', 'provider ref', 'updated'], rows.map((r) => [r.businessOperationId, r.state, String(r.attempts), r.lastOutcome ?? '—', r.providerRef ?? '—', r.updatedAt]));
}

import { resolve } from 'node:path';
import { ConfigError, loadConfigFile, type RetrysafeConfig } from '@retrysafe/config';
import {
  type AdapterV1,
  asBusinessOperationId,
  InvalidStateError,
  type Ledger,
  type OperationRecord,
  UnsafeResumeError,
} from '@retrysafe/contract';
import { isTerminal, NOT_THE_HANDOFF_DECIDED_ON, stateWords } from '@retrysafe/contract/ledger';
import {
  BrokenReceiptChainError,
  createRunner,
  jsonlHandoffSink,
  type Resolution,
  type ResolveResult,
} from '@retrysafe/core';
import { fixIsNewOperation, marksSafe } from '@retrysafe/core/internal';
import { defineCommand, type Options, type Parsed } from '../../../command.js';
import { exactlyOne, RefusedError, UsageError } from '../../../errors.js';
import { readObjectFile } from '../../../files.js';
import { paint, plural } from '../../../output.js';
import { addMissingKey, CHAIN_RUNBOOK, receiptKeysFromEnv, withParamsKeys } from '../chain.js';
import { packetText } from '../packet-text.js';
import {
  configEnvHint,
  ledgerFlags,
  notInLedger,
  TARGET_OPTIONS,
  targetFlags,
  withAdapters,
  withLedger,
} from '../target.js';

export const RESOLVE_OPTIONS = {
  ...TARGET_OPTIONS,
  resume: { description: 're-send with the SAME provider key through the adapter named in --config' },
  markDone: { argument: '<providerRef>', description: 'you verified the effect at the provider: record its reference' },
  abandon: { description: 'give the operation up (nothing more is sent)' },
  resendWith: {
    argument: '<params.json>',
    description:
      'send corrected params (same intent) as a new revision; only when every attempt is known not applied (needs --config)',
  },
  force: {
    description:
      'with --resume: send it again even though the packet marks it not safe, or its key may be forgotten and nothing can look it up first (you checked at the provider that the effect does not exist: if it does, it is made twice)',
  },
  by: { argument: '<name>', description: 'who resolved it, for the receipt (default $USER)' },
  handoffAt: {
    argument: '<createdAt>',
    description:
      'the packet you decided on, as `ledger show` prints it: refused if it was resumed, closed or handed off again since (default: the one read now)',
  },
} as const satisfies Options;

export type ResolveOptions = Parsed<typeof RESOLVE_OPTIONS>;

export type Built = {
  readonly config: RetrysafeConfig | null;
  readonly adapters: readonly AdapterV1[];
  readonly ledger: Ledger;
};

/** `--resume` re-sends with the SAME key through the config's adapter; `--mark-done` records a verified ref; `--abandon`.
 * `dryRun`: only the runner's checks, each refusal worded as the resolution's; null where it would go ahead. `built`:
 * the config, its adapters and the ledger, read, built and opened once by the caller for many operations (and closed by it). */
export function ledgerResolve(opts: ResolveOptions, id: string): Promise<ResolveResult>;
export function ledgerResolve(
  opts: ResolveOptions,
  id: string,
  dryRun: boolean,
  built?: Built,
): Promise<ResolveResult | null>;
export async function ledgerResolve(
  opts: ResolveOptions,
  id: string,
  dryRun = false,
  built?: Built,
): Promise<ResolveResult | null> {
  exactlyOne(
    [opts.resume, opts.markDone, opts.abandon, opts.resendWith],
    'choose exactly one of --resume, --mark-done <providerRef>, --abandon, --resend-with <params.json>',
  );
  refuseForceWithoutResume(opts);
  if ((opts.resume || opts.resendWith !== undefined) && !opts.config) throw await needsConfig(opts, id);
  const corrected = opts.resendWith !== undefined ? readParams(opts.resendWith) : undefined;
  if (opts.markDone !== undefined && !opts.markDone.trim())
    throw new UsageError('--mark-done needs the provider reference of the effect you verified (e.g. pi_123)');
  asBusinessOperationId(id);
  const config = built ? built.config : opts.config ? await loadConfigFile(opts.config) : null;
  const run = (adapters: readonly AdapterV1[]) =>
    withLedger(
      opts,
      async (ledger) => {
        const { current, keyring } = receiptKeysFromEnv();
        const runner = createRunner({
          // Only a send reads or writes the params: a hand-off whose params these keys cannot open is still closed.
          ledger: opts.resume || corrected !== undefined ? withParamsKeys(ledger) : ledger,
          handoff: config?.handoffs ? jsonlHandoffSink(resolve(config.baseDir, config.handoffs)) : undefined,
          policy: config?.policy,
          redact: config?.redact,
          receiptKey: current,
          receiptKeyring: keyring,
        });
        const by = opts.by ?? process.env.USER ?? 'operator';
        const stored = await ledger.get(asBusinessOperationId(id));
        // A rejection whose every attempt is known not applied (the packet then offers resend-with): the request may go
        // out again once its cause is fixed. After one that may have applied, the provider is checked first.
        const rejected = stored?.handoff?.reason === 'rejected' && marksSafe(stored.handoff, 'resend-with');
        // The provider named an intent field: nothing applied, and its correction is another operation, not this one's.
        // Only the packet of a hand-off still open speaks for the operation: a resume keeps the old one on the record.
        const newOperation =
          stored?.state === 'handed-off' && stored.handoff ? fixIsNewOperation(stored.handoff) : false;
        if (opts.resume && stored !== null && !isTerminal(stored) && !dryRun)
          return resumeOpen(runner, { adapters, by, handoffAt: opts.handoffAt }, stored, targetFlags(opts));
        // Bound to the packet decided on (else the one read here): never applied to a later hand-off.
        const handoffAt = opts.handoffAt ?? (stored?.state === 'handed-off' ? stored.handoff?.createdAt : undefined);
        const resolution: Resolution = opts.resume
          ? { action: 'resume', ...(opts.force ? { force: true } : {}) }
          : corrected !== undefined
            ? { action: 'resend-with', params: corrected }
            : opts.markDone !== undefined
              ? { action: 'mark-done', providerRef: opts.markDone.trim() }
              : { action: 'abandon' };
        // The runner owns the rules (broken chain, unsafe resume, resend-with); the CLI only words its refusals.
        const options = { adapters, by, handoffAt };
        const resolving = dryRun
          ? runner.checkResolve(id, resolution, options).then(() => null)
          : runner.resolve(id, resolution, options);
        return await resolving.catch((err: unknown) => {
          if (err instanceof Error && err.message.includes(NOT_THE_HANDOFF_DECIDED_ON))
            throw new RefusedError(
              `not resolving ${id}: it was resumed, closed or handed off again since the packet decided on (${handoffAt}); nothing was sent or written. Read it as it is now: retrysafe ledger show ${id}${targetFlags(opts)}`,
            );
          if (BrokenReceiptChainError.isInstance(err))
            throw new RefusedError(
              `not resolving ${id}: its receipt chain is broken at receipt #${err.index + 1} (${err.reason}); nothing was sent. ${err.missingKey ? `To check it, ${addMissingKey(err.missingKey)}` : `Find out who edited the ledger (retrysafe ledger verify --all${ledgerFlags(opts)}) before acting on it`} (${CHAIN_RUNBOOK}).`,
            );
          const same = InvalidStateError.isInstance(err) && /differ from the stored/.test(err.message);
          if (newOperation && (same || UnsafeResumeError.isInstance(err)))
            throw newOperationRefusal(id, stored!, targetFlags(opts));
          if (UnsafeResumeError.isInstance(err)) throw resumeRefusal(id, err.why, rejected, stored);
          if (InvalidStateError.isInstance(err) && stored === null) throw new RefusedError(notInLedger(id, opts));
          if (same) throw sameParams(id, stored, rejected, targetFlags(opts));
          // Open: a worker holds it, or one (or a resolve) stopped between its steps; only a drive can close it.
          if (InvalidStateError.isInstance(err) && stored !== null && !isTerminal(stored) && !corrected)
            throw new RefusedError(
              `${id} is ${stateWords(stored.state)}, not handed off: nothing was written. A worker may hold it, or one stopped between its steps; drive it as recover() does (looked up at the provider first, never sent while a lease lives): retrysafe ledger resolve ${id} --resume${targetFlags(opts)}${opts.config ? '' : ' --config <file>'}. It ends done, or handed off to you with a packet to decide on.`,
            );
          throw err;
        });
      },
      { config, writes: !dryRun, ledger: built?.ledger },
    );
  if (built) return run(built.adapters);
  return config && (opts.resume || corrected !== undefined) ? withAdapters(config, opts.config!, run) : run([]);
}

/** --force overrides only a resume's refusal (abandon is always safe, the others are never forced). */
export function refuseForceWithoutResume(o: { readonly force?: boolean; readonly resume?: boolean }): void {
  if (o.force && !o.resume) throw new UsageError('--force overrides a refused --resume: not without --resume');
}

/** A send needs the adapter of the operation (read if the ledger can be): a config naming it, or for one left open
 * whose adapter is gone, any config, which hands it off to the person. */
async function needsConfig(opts: ResolveOptions, id: string): Promise<UsageError> {
  const stored = await withLedger(opts, (l) => l.get(asBusinessOperationId(id))).catch(() => null);
  const orphan = stored && !isTerminal(stored) && opts.resume;
  return new UsageError(
    `${opts.resume ? '--resume re-sends' : '--resend-with sends'} through the adapter: pass --config <file> naming ${stored ? `the adapter of ${stored.operation}` : 'it'} (credentials come from environment variables)${configEnvHint()}${orphan ? '; if no adapter can drive it any more, a config naming any other hands it off to you' : ''}`,
  );
}

/** `--resume` of an operation left open by a worker or a resolve that died between its steps (no packet to decide on):
 * driven as recover() does once its lease has run out; another worker holding it is `in-progress`. `target`: the flags
 * naming the ledger (targetFlags), repeated in the command it suggests. */
async function resumeOpen(
  runner: ReturnType<typeof createRunner>,
  { adapters, by, handoffAt }: { adapters: readonly AdapterV1[]; by: string; handoffAt: string | undefined },
  record: OperationRecord,
  target: string,
): Promise<ResolveResult> {
  const id = record.businessOperationId;
  const again = `read it as it is now: retrysafe ledger show ${id}${target}`;
  if (handoffAt !== undefined)
    throw new RefusedError(
      `not resolving ${id}: ${NOT_THE_HANDOFF_DECIDED_ON} (it is ${stateWords(record.state)}); ${again}`,
    );
  // A person asked for this one: what --config cannot drive is handed off to them to decide on, not left stuck.
  const [report] = await runner.recover({ adapters, by, businessOperationId: id, handOffUndrivable: true });
  if (report?.result) return report.result;
  if (report?.action === 'skipped-busy') {
    const retryAfterMs = Math.max(0, (record.leaseExpiresAt ?? 0) - Date.now());
    return { status: 'in-progress', businessOperationId: id, statusRef: record.statusRef, retryAfterMs };
  }
  const why =
    report?.error?.message ??
    (report === undefined
      ? 'it was closed or removed since'
      : report.action === 'skipped-no-adapter'
        ? `--config names no adapter for ${record.operation}`
        : `it is ${stateWords(report.to ?? 'unreadable')} now`);
  throw new RefusedError(`not resuming ${id}: ${why}; ${again}`);
}

/** A refused resume, with the step that works: a rejected request goes out as is only once its cause is fixed. A
 * packet that marked it safe was judged again at resume (its key may be forgotten since). */
function resumeRefusal(id: string, why: string, rejected: boolean, stored: OperationRecord | null): RefusedError {
  if (rejected) {
    return new RefusedError(
      `not resuming ${id}: the handoff packet marks resume as not safe — ${why}; nothing was sent. If you fixed the cause outside the request (the account, a setting at the provider), send it again as is: --resume --force. To send corrected params instead: --resend-with <params.json>; if the effect exists at the provider after all: --mark-done <providerRef>.`,
    );
  }
  const safe = marksSafe(stored?.handoff, 'resume');
  const what = safe ? 'resume is no longer safe' : 'the handoff packet marks resume as not safe';
  return new RefusedError(
    `not resuming ${id}: ${what} — ${why}. Check at the provider first; then --mark-done <providerRef> if the effect exists, or --resume --force if you are sure it does not (it is sent again with nothing looked up first: if the effect exists, it is made twice).`,
  );
}

/** A rejection naming an intent field (fixIsNewOperation): sent again as is it is refused again, and corrected it is
 * another operation, so the packet's own why is said and this one abandoned. */
function newOperationRefusal(id: string, stored: OperationRecord, target: string): RefusedError {
  const why = stored.handoff?.safeNextActions.find((a) => a.action === 'resend-with')?.why;
  return new RefusedError(
    `not sending ${id} again: ${why}; nothing was sent. Close it: retrysafe ledger resolve ${id} --abandon${target}`,
  );
}

/** `--resend-with` of the params the operation already has: a resume, which the packet may mark not safe (--force). */
function sameParams(id: string, stored: OperationRecord | null, rejected: boolean, target: string): RefusedError {
  const resumeSafe = marksSafe(stored?.handoff, 'resume');
  const next =
    resumeSafe || stored?.handoff?.reason !== 'rejected'
      ? 'To send the same request again after fixing the cause outside it: --resume.'
      : rejected
        ? 'To send the same request again after fixing the cause outside it: --resume --force (the packet marks resume not safe only because the request as it was got rejected).'
        : `An attempt before the rejection may have applied: check at the provider first (retrysafe ledger show ${id}${target}); then --mark-done <providerRef> if the effect exists.`;
  return new RefusedError(`not re-sending ${id}: these are the params it already has; nothing was sent. ${next}`);
}

/** The corrected params of `--resend-with`: a JSON object in a file, within the file limits. */
function readParams(file: string): Record<string, unknown> {
  try {
    return readObjectFile(file, `${file} must hold a JSON object of params`);
  } catch (err) {
    throw err instanceof UsageError || ConfigError.isInstance(err)
      ? new UsageError(`--resend-with: ${(err as Error).message}`)
      : err;
  }
}

/** A status URL without its query or user-info (a signed URL's token is a credential); any other ref as it is. */
const shownRef = (ref: string | null) => {
  if (ref === null || !URL.canParse(ref)) return ref;
  const u = new URL(ref);
  return `${u.origin}${u.pathname}`;
};

/** The answer as printed: without the provider's result body, which may hold personal data (`ledger show` leaves it out
 * too), and a status URL without its query. */
export const printable = (r: ResolveResult) => {
  if (r.status === 'in-progress') return { ...r, statusRef: shownRef(r.statusRef) };
  if (r.status !== 'done') return r;
  const { result: _body, ...shown } = r;
  return shown;
};

export const resolved = (r: ResolveResult) => r.status === 'resolved' || r.status === 'done';

/** `target`: the flags naming the ledger (targetFlags), repeated in the command it suggests. */
export function resolveText(r: ResolveResult, color = false, target = ''): string {
  switch (r.status) {
    case 'resolved':
      return `${paint('green', '✓', color)} ${r.businessOperationId}: ${r.state}${r.providerRef ? ` (provider ref ${r.providerRef})` : ''}`;
    case 'done':
      return `${paint('green', '✓', color)} ${r.businessOperationId}: resumed and done${r.adopted ? ' (the provider already had it: result adopted, nothing created twice)' : ''}; provider ref ${r.providerRef ?? '—'} after ${plural(r.attempts, 'attempt')} in all`;
    case 'in-progress':
      return `${paint('yellow', '…', color)} ${r.businessOperationId}: another worker holds it${r.statusRef ? ` (status ${shownRef(r.statusRef)})` : ''}; try again in ${Math.ceil(r.retryAfterMs / 1000)} s`;
    case 'handed-off':
      return `${paint('red', '✗', color)} ${r.businessOperationId}: ${r.packet.reason === 'recovery-failed' ? 'could not be driven: handed off to you' : 'resumed, but handed off again'}\n${packetText(r.packet, color, target)}`;
  }
}

export const ledgerResolveCommand = defineCommand({
  name: 'ledger resolve',
  description:
    'resolve a handed-off operation: --resume (same provider key), --mark-done <providerRef>, --abandon, or --resend-with <params.json>',
  arguments: [['<id>', 'business-operation id']],
  options: RESOLVE_OPTIONS,
  async run({ print, color }, o, [id]: [string]) {
    const r = await ledgerResolve(o, id);
    return print(o, printable(r), () => resolveText(r, color, targetFlags(o)), resolved(r));
  },
});

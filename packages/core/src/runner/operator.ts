/** Operator actions: recover() for operations a dead worker left open, and a person's resolve(). */
import {
  AdapterConfigurationError,
  type AdapterV1,
  asBusinessOperationId,
  asRunId,
  type BusinessOperationId,
  CardValidationError,
  type ClaimResult,
  fingerprint,
  InvalidStateError,
  LeaseExpiredError,
  LedgerError,
  newRunId,
  type OperationRecord,
  type OperationState,
  RetryExhaustedError,
  type RetrySafetyCard,
  RetrysafeError,
  UnsafeResumeError,
} from '@retrysafe/contract';
import { identityFields, isTerminal, NOT_THE_HANDOFF_DECIDED_ON } from '@retrysafe/contract/ledger';
import { lookupAvailable, resendSafety } from '@retrysafe/contract/rules';
import { MAYBE_APPLIED_STATES } from '../decide.js';
import { defined } from '../defined.js';
import { BrokenReceiptChainError } from '../errors/broken-receipt-chain-error.js';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { buildPacket, KEY_FORGOTTEN, resumeSafeByKey } from '../handoff.js';
import { callerAttemptIds, checkAdapterShape, findAdapter } from '../intake/adapter.js';
import { type Operation, paramsConflict, storedOperation } from '../intake/operation.js';
import { DEFAULT_LEASE_MS } from '../intake/policy.js';
import { correctionRule, needsFreshKey, notAppliedKeyGone, supersedeCheck } from '../intake/supersede.js';
import { checkParamsOpen, isParamsSealed } from '../ledger/encrypted-params.js';
import { verifyOperation } from '../receipts.js';
import { personRef } from '../redact.js';
import { claimAgain, claimInput, execute, heldElsewhere, restartClaimed, supersede } from './claim.js';
import { errText, type RunnerContext } from './context.js';
import { checkSealable, resolveReceipt } from './receipt-chain.js';
import { fenceOf, orRelease } from './state.js';
import { fromTerminal, sendPacket } from './terminal.js';
import type { RecoverOptions, RecoverReport, Resolution, ResolveOptions, ResolveResult, RunResult } from './types.js';

export async function recover(ctx: RunnerContext, opts: RecoverOptions): Promise<RecoverReport[]> {
  if (!opts || !Array.isArray(opts.adapters))
    throw new RunnerConfigurationError(
      'recover',
      'recover({ adapters: [...] }) needs the adapters of the operations to reconcile',
    );
  for (const a of opts.adapters) checkAdapterShape(a);
  const reports: RecoverReport[] = [];
  const run = callerRun(opts);
  const seen = new Set<string>();
  const unreadable = (id: string, err: LedgerError) => {
    if (!seen.has(id)) reports.push(unreadableRow(ctx, id, err));
    seen.add(id);
  };
  if (opts.businessOperationId !== undefined) {
    const id = asBusinessOperationId(opts.businessOperationId);
    for (const record of await openRecord(ctx, id, unreadable))
      reports.push((await recoverListed(ctx, record, opts, run)).report);
    return reports;
  }
  // A record left as it is keeps its place, the oldest: a limited pass lists past those it left, or the records
  // behind them would never be reached.
  const { limit } = opts;
  let driven = 0;
  for (;;) {
    const want = limit === undefined ? undefined : limit - driven + seen.size;
    const listed = await ctx.ledger.recoverCandidates(ctx.clock.now(), want, unreadable);
    const fresh = listed.filter((r) => !seen.has(r.businessOperationId));
    for (const record of fresh) {
      if (limit !== undefined && driven >= limit) break;
      seen.add(record.businessOperationId);
      const { report, left } = await recoverListed(ctx, record, opts, run);
      reports.push(report);
      if (!left) driven++;
    }
    if (want === undefined || (limit !== undefined && driven >= limit) || listed.length < want || !fresh.length)
      return reports;
  }
}

/** One listed record, on its own: one that cannot be driven is handed off, and the healthy ones behind it proceed.
 * `left`: nothing was written (no adapter here, or a configuration that cannot drive it, unless handOffUndrivable). */
async function recoverListed(
  ctx: RunnerContext,
  record: OperationRecord,
  { adapters, handOffUndrivable, by }: Pick<RecoverOptions, 'adapters' | 'handOffUndrivable' | 'by'>,
  run: Pick<Operation, 'runId' | 'attemptIds'>,
): Promise<{ report: RecoverReport; left: boolean }> {
  try {
    checkSealable(ctx, record, 'recover it');
  } catch (err) {
    // Not handed off: that would append an unkeyed receipt.
    return { report: leftAsItIs(ctx, record, err), left: true };
  }
  try {
    checkParamsOpen(record);
    const report = await recoverOne(ctx, record, adapters, { ...run, by });
    if (report.action !== 'skipped-no-adapter' || !handOffUndrivable)
      return { report, left: report.action === 'skipped-no-adapter' };
    throw new RunnerConfigurationError(
      'recover',
      `no adapter given for ${record.operation} (removed, renamed, or another application's): nothing could be looked up`,
    );
  } catch (err) {
    // This process's configuration (or its params key) cannot drive it, as run() would refuse before its claim: left
    // for a pass that can unless handOffUndrivable. One stopped before sending (its lease ran out) always stays.
    const notTheRecord =
      RunnerConfigurationError.isInstance(err) ||
      AdapterConfigurationError.isInstance(err) ||
      CardValidationError.isInstance(err) ||
      isParamsSealed(err);
    if (LeaseExpiredError.isInstance(err) || (notTheRecord && !handOffUndrivable))
      return { report: leftAsItIs(ctx, record, err), left: true };
    return { report: await recoveryFailed(ctx, record, err), left: false };
  }
}

/** Checked before anything is written. */
function callerRun(opts: Pick<RecoverOptions, 'runId' | 'attemptIds'>): Pick<Operation, 'runId' | 'attemptIds'> {
  return {
    runId: opts.runId !== undefined ? asRunId(opts.runId) : newRunId(),
    attemptIds: callerAttemptIds(opts.attemptIds),
  };
}

/** Whether its holder still lives is the claim's to judge. */
async function openRecord(
  ctx: RunnerContext,
  id: BusinessOperationId,
  unreadable: (id: string, err: LedgerError) => void,
): Promise<OperationRecord[]> {
  try {
    const record = await ctx.ledger.get(id);
    return record && !isTerminal(record) ? [record] : [];
  } catch (err) {
    if (!LedgerError.isInstance(err)) throw err;
    unreadable(id, err);
    return [];
  }
}

/** Left for a later pass: reported `failed`, nothing written. */
function leftAsItIs(ctx: RunnerContext, record: OperationRecord, err: unknown): RecoverReport {
  const { name, code, message } = err as RunnerConfigurationError;
  const card = { operation: record.operation } as RetrySafetyCard;
  ctx.log('warn', 'recover-failed', message, { id: record.businessOperationId, card, redactor: ctx.baseRedactor });
  return reportOf(record, record.state, 'failed', { error: { name, code, message } });
}

function unreadableRow(ctx: RunnerContext, key: string, err: LedgerError): RecoverReport {
  const { name, code } = err;
  // A ledger of one's own may quote the row it could not read: the report is redacted as the log line is.
  const message = ctx.baseRedactor.text(err.message);
  const id = key as BusinessOperationId; // the row's stored key, not re-checked: a refusal here would stop recovery
  ctx.log('warn', 'recover-failed', `could not read the stored row of ${id}: ${message}`);
  return { businessOperationId: id, from: null, to: null, action: 'failed', error: { name, code, message } };
}

const reportOf = (
  record: OperationRecord,
  to: OperationState,
  action: RecoverReport['action'],
  more?: Pick<RecoverReport, 'result' | 'error'>,
): RecoverReport => ({ businessOperationId: record.businessOperationId, from: record.state, to, action, ...more });

/** `gone`: finished and pruned since the listing. */
const notClaimed = (record: OperationRecord, claim: ClaimResult, more?: Pick<RecoverReport, 'error'>) =>
  claim.kind === 'gone'
    ? reportOf(record, record.state, 'already-terminal', more)
    : reportOf(record, claim.record.state, claim.kind === 'terminal' ? 'already-terminal' : 'skipped-busy', more);

async function recoverOne(
  ctx: RunnerContext,
  record: OperationRecord,
  adapters: readonly AdapterV1[],
  run: Pick<Operation, 'runId' | 'attemptIds'> & Pick<RecoverOptions, 'by'>,
): Promise<RecoverReport> {
  const { ledger, log } = ctx;
  const found = findAdapter(adapters, record);
  if (!found) {
    log('warn', 'recover-skip', `no adapter given for ${record.operation}`);
    return reportOf(record, record.state, 'skipped-no-adapter');
  }
  const listed = storedOperation(ctx, found, record, run);
  const claimedAt = ctx.clock.now();
  // Only the listed row: one finished and pruned since the listing is not created again as a new operation.
  const claim = await ledger.claim({ ...claimInput(ctx, listed, claimedAt), existing: true });
  if (claim.kind !== 'claimed') return notClaimed(record, claim);
  const op = await orRelease(ctx, claim, listed.policy.clockSkewMarginMs, () => {
    // Written since the listing by a worker with a receipt key this one lacks: left as it is (checked as listed).
    checkSealable(ctx, claim.record, 'recover it');
    // Claimed by another since the listing (a person's new revision: other params, another key): what this claim
    // holds is the operation now, and no revision can replace it while the fence is this one's.
    return claim.record.fence === record.fence + 1 ? listed : storedOperation(ctx, found, claim.record, run);
  });
  if (run.by !== undefined) {
    // A person's resume of an operation left open: named in its receipts, as a resume of a hand-off is.
    const last = (await ledger.receipts(record.businessOperationId)).at(-1);
    const reason = `a person (${personRef(run.by)}) chose resume of the operation left open: driven as recover() does`;
    const receipt = resolveReceipt(ctx, claim.record, last, op, { action: 'resume', reason: op.redactor.text(reason) });
    await ledger.appendReceipt(fenceOf(claim.record), receipt);
  }
  log('info', 'recover', `reconciling from ${claim.record.state}`, op);
  const result = await execute(ctx, op, { ...claim, claimedAt, dispatchWritten: false }).catch(async (err) => {
    // No call ever left: given back (not-sent) for the next call of its id, no person's to resolve.
    if (!RetryExhaustedError.isInstance(err) || (await ledger.get(record.businessOperationId))?.state !== 'not-sent')
      throw err;
    return reportOf(record, 'not-sent', 'given-back', {
      error: { name: err.name, code: err.code, message: err.message },
    });
  });
  if ('action' in result) return result;
  const after = await ledger.get(record.businessOperationId);
  const action = result.status === 'done' ? (result.adopted ? 'adopted' : 'completed') : result.status;
  return reportOf(record, after?.state ?? record.state, action, { result });
}

async function recoveryFailed(ctx: RunnerContext, record: OperationRecord, err: unknown): Promise<RecoverReport> {
  const { baseRedactor, clock, ledger, log } = ctx;
  let redactor = baseRedactor;
  try {
    redactor = baseRedactor.withValuesFrom(record.params);
  } catch {
    // the params themselves may be what cannot be handled: the base patterns still apply
  }
  const error = {
    name: err instanceof Error ? err.name : 'Error',
    ...(RetrysafeError.isInstance(err) ? { code: err.code } : {}),
    message: redactor.text(err instanceof Error ? err.message : String(err)),
    ...(LedgerError.isInstance(err) ? { providerMayHaveBeenCalled: err.providerMayHaveBeenCalled } : {}),
  };
  const id = record.businessOperationId;
  const logAs = { id, card: { operation: record.operation } as RetrySafetyCard, redactor };
  log('warn', 'recover-failed', `could not drive it: ${error.name}: ${error.message}`, logAs);
  try {
    const leaseMs = ctx.options.policy?.leaseMs ?? DEFAULT_LEASE_MS;
    const input = { ...identityFields(record), owner: ctx.owner, leaseMs, now: clock.now(), existing: true } as const;
    const claim = await ledger.claim(input);
    // The failed run kept its lease while an owner it took over from may still be sending (releaseLease).
    const kept = claim.kind === 'busy' && claim.record.leaseOwner === ctx.owner;
    if (claim.kind !== 'claimed' && !kept) return notClaimed(record, claim, { error });
    const now = clock.now();
    const receipts = await ledger.receipts(id).catch(() => []);
    const packet = buildPacket({
      record: claim.record,
      reason: 'recovery-failed',
      explanation: `recover() could not drive this operation (${error.name}${error.code ? ` ${error.code}` : ''}: ${error.message}); nothing more was sent. It may have been dispatched before: check the provider, then resolve it.`,
      receipts,
      resendSafe: false,
      correction: null,
      now,
    });
    const after = await ledger.handOff(fenceOf(claim.record), packet, now);
    // No operation's policy here (the record could not be driven): the runner's maxElapsed, else one lease.
    const ms = ctx.options.policy?.maxElapsedMs ?? ctx.options.policy?.leaseMs ?? DEFAULT_LEASE_MS;
    await sendPacket(ctx, packet, logAs, { ms });
    const attempts = after.attemptCount;
    const result = { status: 'handed-off' as const, businessOperationId: id, packet, attempts, receipts };
    return reportOf(record, after.state, 'handed-off', { error, result });
  } catch (again) {
    const why = `could not hand it off either (${errText(again)}); it stays for the next pass`;
    log('warn', 'recover-failed', why, logAs);
    return reportOf(record, record.state, 'failed', { error });
  }
}

function adapterFor(adapters: readonly AdapterV1[], record: OperationRecord, action: string) {
  for (const a of adapters) checkAdapterShape(a);
  const found = findAdapter(adapters, record);
  if (found) return found;
  throw new RunnerConfigurationError('resolve', `${action} needs the adapter for ${record.operation} in { adapters }`);
}

/** Every check resolve() makes before it writes or sends (a broken receipt chain first); returns the step that writes
 * and sends, so a dry run and the resolution share one set of checks. */
export async function checkResolve(
  ctx: RunnerContext,
  rawId: string,
  resolution: Resolution,
  opts: ResolveOptions = {},
): Promise<() => Promise<ResolveResult>> {
  const id = asBusinessOperationId(rawId);
  const record = await ctx.ledger.get(id);
  if (!record) throw new InvalidStateError(id, 'absent', 'no such operation in the ledger');
  await checkChain(ctx, id);
  checkSealable(ctx, record, 'resolve it');
  const by = opts.by ?? ctx.owner;
  const action = resolution?.action;
  const person = { by, ...callerRun(opts), handoffAt: opts.handoffAt };
  decidedOn(record, opts.handoffAt, action);
  if (action === 'resend-with') {
    // The corrected params, same intent, as a new revision (never while an attempt may have been applied).
    const found = adapterFor(opts.adapters ?? [], record, action);
    const receipts = await ctx.ledger.receipts(id);
    const op = storedOperation(ctx, found, record, person, { params: resolution.params, receipts });
    const check = supersedeCheck(record, receipts, correctionRule(op, ctx.clock.now()));
    if (!check.ok) throw paramsConflict(op, record, `a new revision is not allowed: ${check.why}`);
    return () => supersede(ctx, op, record, receipts, `resend-with by ${personRef(by)}`);
  }
  const refused = (why: string) => new InvalidStateError(id, record.state, why);
  if (record.state !== 'handed-off') throw refused(`only a handed-off operation can be resolved (${action})`);
  if (action === 'resume') return resume(ctx, record, resolution.force === true, opts.adapters ?? [], person);
  if (action !== 'mark-done' && action !== 'abandon') throw refused(`unknown resolution ${JSON.stringify(action)}`);
  return () => close(ctx, record, resolution, person);
}

/** Acting on a chain edited outside retrysafe would bury the break. */
async function checkChain(ctx: RunnerContext, id: BusinessOperationId): Promise<void> {
  const key = ctx.options.receiptKey;
  const keys = { ...ctx.options.receiptKeyring, ...(key ? { [key.id]: key.secret } : {}) };
  // Chains written before a key was set pass (a keyed-then-unkeyed chain never does).
  const check = await verifyOperation(ctx.ledger, id, {
    ...(Object.keys(keys).length > 0 ? { keys } : {}),
    allowUnkeyed: true,
  });
  if (check === null || check.ok) return;
  const err = new BrokenReceiptChainError(id, check.index, check.reason, check.missingKey);
  ctx.log('warn', 'resolve-refused', err.message);
  throw err;
}

type PersonRun = Pick<Operation, 'runId' | 'attemptIds'> & Pick<ResolveOptions, 'handoffAt'> & { readonly by: string };

/** A decision that names its packet applies to that hand-off only (resumed and handed off again since: an abandon
 * would bury a sent effect). */
function decidedOn(record: OperationRecord, handoffAt: string | undefined, action: string | undefined): void {
  if (handoffAt === undefined || (record.state === 'handed-off' && record.handoff?.createdAt === handoffAt)) return;
  const id = record.businessOperationId;
  throw action === 'resume'
    ? new UnsafeResumeError(id, NOT_THE_HANDOFF_DECIDED_ON)
    : new InvalidStateError(id, record.state, NOT_THE_HANDOFF_DECIDED_ON);
}

/** Re-sends with the SAME provider key and a fresh budget, unless the packet marks it unsafe and `force` is not set. */
async function resume(
  ctx: RunnerContext,
  record: OperationRecord,
  force: boolean,
  adapters: readonly AdapterV1[],
  p: PersonRun,
): Promise<() => Promise<RunResult>> {
  const { clock, ledger, log } = ctx;
  const id = record.businessOperationId;
  const resumeAction = record.handoff?.safeNextActions.find((a) => a.action === 'resume');
  if (resumeAction && !resumeAction.safe && !force) {
    log('warn', 'resume-refused', `resume refused: the packet marks it not safe (${resumeAction.why})`);
    throw new UnsafeResumeError(id, resumeAction.why);
  }
  const op = storedOperation(ctx, adapterFor(adapters, record, 'resume'), record, p);
  const claimedAt = clock.now();
  if (record.handoff?.reason === 'rejected') {
    // The provider may have stored the rejection under the key, which a same-key resume would only replay: with every
    // call known not applied, the same params go out as a new revision, under the key a correction takes.
    const receipts = await ledger.receipts(id);
    if (needsFreshKey(op.card, receipts) && supersedeCheck(record, receipts, correctionRule(op, claimedAt)).ok)
      return () => supersede(ctx, op, record, receipts, `resume by ${personRef(p.by)}`);
  }
  // "The provider folds the re-send" held when the packet was written; the key may have expired since: then
  // the resumed run looks the operation up before any send (state `unknown`), and without a lookup it is refused.
  const margin = op.policy.clockSkewMarginMs;
  const safety = resendSafety(op.card, record.firstDispatchedAt, claimedAt, margin);
  // So did a last call's "not applied" under a key that may only fold it. Force overrides the packet's "not safe";
  // a resume it marked safe is still looked up first where it can be, and forced goes out only where it cannot.
  const overridden = force && resumeAction?.safe === false;
  const forgotten = !overridden && notAppliedKeyGone(op.card, record, claimedAt, margin);
  const byKey = resumeSafeByKey(resumeAction);
  const keyMayBeGone = (byKey && !safety.safe) || forgotten;
  const blind = keyMayBeGone && !lookupAvailable(op.card);
  if (blind && !force) {
    const why = forgotten ? KEY_FORGOTTEN : safety.why;
    log('warn', 'resume-refused', `resume refused: no longer safe (${why})`, op);
    throw new UnsafeResumeError(id, why);
  }
  return async () => {
    const last = (await ledger.receipts(id)).at(-1);
    const reason = `a person (${personRef(p.by)}) chose resume: same provider key, fresh budget`;
    const restartAs = { action: 'resume', reason, claimedAt, resume: true };
    const { claim, restart } = await claimAgain(ctx, op, record, last, restartAs);
    if (claim.kind === 'busy') return heldElsewhere(claim.record, clock.now());
    if (claim.kind !== 'claimed') return fromTerminal(ctx, claim.record, null, op);
    if (claim.record.fence !== record.fence + 1) {
      // Resumed and handed off again since the read: handed back as it is and judged on its packet now (a forced
      // resume was forced against the old one, a bound one decided on it: both refused).
      if (claim.record.handoff && !MAYBE_APPLIED_STATES.includes(claim.record.state)) {
        const current = await ledger.handOff(fenceOf(claim.record), claim.record.handoff, clock.now());
        if (force || p.handoffAt !== undefined) throw new UnsafeResumeError(id, NOT_THE_HANDOFF_DECIDED_ON);
        checkSealable(ctx, current, 'resume it'); // its receipts may now be sealed with a key this runner lacks
        return (await resume(ctx, current, false, adapters, p))();
      }
      // Or another's run of it (a resume, a new revision) stopped mid-flight: taken over as run() would, as stored now.
      const stored = await orRelease(ctx, claim, op.policy.clockSkewMarginMs, () => {
        checkSealable(ctx, claim.record, 'resume it');
        return storedOperation(ctx, adapterFor(adapters, claim.record, 'resume'), claim.record, p);
      });
      return execute(ctx, stored, { ...claim, claimedAt, dispatchWritten: false });
    }
    // Safe only by the key, the effect may exist: from `unknown`, every re-send of the resumed run is held to the key's
    // retention (a `claimed` run would retry a throttled send past it as a new request).
    const resumed =
      (byKey || forgotten) && !blind
        ? await ledger.setState(fenceOf(claim.record), { state: 'unknown', now: clock.now() })
        : claim.record;
    const forced = overridden
      ? ', forced past an unsafe packet'
      : blind
        ? ', forced past a key the provider may have forgotten'
        : '';
    log('info', 'resume', `a person resumed it (${personRef(p.by)})${forced}: re-sending with the same key`, op);
    return restartClaimed(ctx, op, { record: resumed, claimedAt }, restart);
  };
}

async function close(
  ctx: RunnerContext,
  record: OperationRecord,
  resolution: Extract<Resolution, { action: 'mark-done' | 'abandon' }>,
  p: PersonRun,
): Promise<ResolveResult> {
  const { baseRedactor, clock, ledger, log } = ctx;
  const id = record.businessOperationId;
  const providerRef = resolution.action === 'mark-done' ? resolution.providerRef : undefined;
  // As it will be closed: a person may have sent a corrected request (another key, other params) or resumed it since
  // `record` was read. Read after the chain, so any write since adds a receipt: the ledger refuses this one's seq.
  const last = (await ledger.receipts(id)).at(-1);
  const current = (await ledger.get(id)) ?? record;
  const redactor = baseRedactor.withValuesFrom(current.params);
  const requestFingerprint = last?.requestFingerprint ?? fingerprint(redactor.params(current.params));
  const reason = redactor.text(`resolved by a person (${personRef(p.by)})`);
  const ref = typeof providerRef === 'string' ? redactor.text(providerRef) : undefined;
  const by = { ...p, providerKey: current.providerKey, requestFingerprint };
  const receipt = resolveReceipt(ctx, current, last, by, { action: resolution.action, reason, providerRef: ref });
  // The ledger checks the hand-off decided on in the write itself: one made since resolve() checked it is refused there.
  const resolved = defined({ action: resolution.action, providerRef, by: p.by, handoffAt: p.handoffAt });
  // One write with its receipt: a crash between two would leave it closed without the receipt the runbook promises.
  const after = await ledger.resolve(id, resolved, clock.now(), receipt);
  log('info', 'resolve', `${resolution.action} by ${personRef(p.by)}`);
  const state = after.state as 'succeeded' | 'abandoned';
  return { status: 'resolved', businessOperationId: id, state, providerRef: after.providerRef };
}

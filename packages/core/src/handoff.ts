import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type {
  HandoffAttempt,
  HandoffPacket,
  HandoffReason,
  HandoffSink,
  OperationRecord,
  Receipt,
  SafeAction,
} from '@retrysafe/contract';
import { unstorable } from '@retrysafe/contract/ledger';
import { withinIntent } from '@retrysafe/contract/rules';
import { defined } from './defined.js';
import { RunnerConfigurationError } from './errors/runner-configuration-error.js';
import { namingPath } from './files.js';
import {
  type CorrectionRule,
  correctionCheck,
  everyAttemptNotApplied,
  isSend,
  needsFreshKey,
  notAppliedKeyGone,
  notAppliedMayHaveLanded,
  refusedBeforeProcessing,
  refusedUntilUserActs,
} from './intake/supersede.js';

interface PacketInput {
  readonly record: OperationRecord;
  readonly reason: HandoffReason;
  readonly explanation: string;
  /** The operation's receipts so far, already redacted: the packet is built from these, never from params. */
  readonly receipts: readonly Receipt[];
  readonly resendSafe: boolean;
  /** What a resume would do, when resendSafe alone does not say it (e.g. the key replays a stored error). */
  readonly resumeNote?: string;
  /** What says whether a correction may go out (the operation's card); null: no adapter at hand, none offered. */
  readonly correction: CorrectionRule | null;
  readonly now: number;
}

const RESUME_WHY = {
  rejected:
    'the provider refused the request itself (its params: validation, a decline, a missing object …): as is, it will be refused again — send corrected params (resend-with); resume is offered only after a refusal for a cause outside the params',
  // No card says whether a provider's not-found lies outside the params, so it is not offered as one.
  notFound:
    'the provider found no object the request names: a wrong value in its params (send corrected ones: resend-with), or one the credentials cannot see (some providers answer so for what is out of reach); nothing says which, so resume is not marked safe: if the params are right, fix the access, then resume with --force',
  refusedUntilFixed:
    'nothing was applied: the provider refused this request before processing it, for a cause outside its params (permission, credentials, configuration, membership …); a resume sends it again and is refused again until that cause is fixed',
  actionRequired:
    'the provider refuses this request until the user takes the step it asked for; once they have, the same call (or a resume) sends it again',
  keyMayHold:
    'the provider rejected the last request, but an earlier call under its key was recorded not applied, which may only mean that a re-send under the key folds into it: that call may have applied: check the provider before anything else is sent for it (a corrected request goes out under the same key, which refuses it or applies it over the first)',
  folded: 'a re-send with the same provider key cannot create a second effect (the provider folds it into the first)',
  notApplied: 'the last thing known is that the effect was not applied',
  mayExist:
    'the effect may already exist and the provider does not fold re-sends together: check the provider before resuming, or it may happen twice',
};

/** Why a resume is not safe after a last call recorded not applied under a key that may be gone (notAppliedKeyGone). */
export const KEY_FORGOTTEN =
  'a call under the provider key was recorded not applied, which may only mean that a re-send under the key folds into it, and the provider may no longer hold the key: check the provider before resuming, or it may happen twice';

/** Refused until the user takes a step the provider asked for, and every call known not applied: the same call, made
 * again, is sent (reissueCheck). The caller's to act on, not a person's. */
export const waitsForUser = (packet: HandoffPacket, receipts: readonly Receipt[]) =>
  refusedUntilUserActs(receipts) && marksSafe(packet, 'resend-with');

/** Why resend-with is not offered where the provider named an intent field: its correction is another intent, so a new
 * operation (resend-with refuses it), and a revision of this one would make the effect twice beside it. */
const INTENT_NAMED =
  'the provider named an intent field: a request with it corrected is another intent, a new operation the caller makes (resend-with refuses it)';
export const NEW_OPERATION = `${INTENT_NAMED}; nothing of this one was applied, so abandon it`;

/** A packet whose fix is a new operation (NEW_OPERATION): an intent field's correction is never this one's revision. */
export const fixIsNewOperation = (packet: HandoffPacket) =>
  packet.safeNextActions.some((a) => a.action === 'resend-with' && a.why === NEW_OPERATION);

export const marksSafe = (packet: HandoffPacket | null | undefined, action: SafeAction['action']) =>
  packet?.safeNextActions.some((a) => a.action === action && a.safe) === true;

/** A packet's resume marked safe only because the provider folds a same-key re-send: true while the key is kept, so judged again at resume. */
export function resumeSafeByKey(action: SafeAction | undefined): boolean {
  return action?.safe === true && action.why === RESUME_WHY.folded;
}

/** `created`: an object a rejected attempt left at the provider. */
function resumeAction(input: PacketInput, created: string | undefined): SafeAction {
  const resume = (safe: boolean, why: string): SafeAction => ({ action: 'resume', safe, why });
  if (created !== undefined)
    return resume(
      false,
      `the rejected attempt left ${created} at the provider: a new request (corrected or not) would make a second one — continue on ${created} there`,
    );
  if (input.reason === 'rejected') {
    // An earlier attempt may have applied, or the key already held another request (a conflict).
    const all = everyAttemptNotApplied(input.receipts, input.record);
    if (!all.ok)
      return resume(
        false,
        `the provider rejected the last request, but an effect may already exist (${all.why}): check the provider before any new request (corrected or not), or it may happen twice`,
      );
    const left = input.correction === null ? null : correctionCheck(input.receipts, input.record, input.correction);
    if (left?.ok === false) return resume(false, left.why);
    if (input.correction && notAppliedMayHaveLanded(input.correction.card, input.record.providerKey, input.receipts))
      return resume(false, RESUME_WHY.keyMayHold);
    // Nothing applied and no object left: a resume cannot make a second effect. It is offered where the cause lies
    // outside the params; one of the params themselves is the correction's.
    if (!refusedBeforeProcessing(input.receipts)) {
      if (intentFieldFix(input) === NEW_OPERATION)
        return resume(false, `as is, it will be refused again: ${NEW_OPERATION}`);
      const notFound = input.receipts.findLast(isSend)?.rejectReason === 'not-found';
      return resume(false, notFound ? RESUME_WHY.notFound : RESUME_WHY.rejected);
    }
    return resume(
      true,
      refusedUntilUserActs(input.receipts) ? RESUME_WHY.actionRequired : RESUME_WHY.refusedUntilFixed,
    );
  }
  if (input.resumeNote !== undefined) return resume(false, input.resumeNote);
  if (input.resendSafe) return resume(true, RESUME_WHY.folded);
  // `claimed` after dispatches is written only when every attempt so far is known not to have applied: by the key
  // alone after a call recorded not applied under it, which holds only while the provider keeps the key.
  if (input.record.firstDispatchedAt === null) return resume(true, RESUME_WHY.notApplied);
  if (input.record.state !== 'claimed') return resume(false, RESUME_WHY.mayExist);
  const { correction, record, now } = input;
  return notAppliedKeyGone(correction?.card ?? null, record, now, correction?.clockSkewMarginMs ?? 0)
    ? resume(false, KEY_FORGOTTEN)
    : resume(true, RESUME_WHY.notApplied);
}

/** Why resend-with is not offered where the last rejection named an intent field (its correction is another
 * intent): abandon this one only where nothing may have applied and the params, not the access, are at fault. */
function intentFieldFix(input: PacketInput): string | null {
  const { correction, receipts, record } = input;
  const card = correction?.card;
  const { intentFields = [], optionalIntentFields = [] } = card?.businessOperationId ?? {};
  const named = receipts.at(-1)?.fields ?? [];
  if (!card || !named.some((f) => withinIntent(f.path, [...intentFields, ...optionalIntentFields]))) return null;
  if (notAppliedMayHaveLanded(card, record.providerKey, receipts)) return `${INTENT_NAMED}; ${RESUME_WHY.keyMayHold}`;
  if (receipts.findLast(isSend)?.rejectReason === 'not-found') return `${INTENT_NAMED}; ${RESUME_WHY.notFound}`;
  return NEW_OPERATION;
}

function nextActions(input: PacketInput, created: string | undefined): SafeAction[] {
  const actions = [resumeAction(input, created)];
  const { correction, receipts, record } = input;
  if (
    (input.reason === 'rejected' || input.reason === 'retry-exhausted') &&
    correction !== null &&
    correctionCheck(receipts, record, correction).ok
  ) {
    const fix = intentFieldFix(input);
    if (fix) return [...actions, { action: 'resend-with', safe: false, why: fix }, ...closeActions(created)];
    // Which key the revision takes (supersede in runner/claim.ts), so a person can tell what the provider will see.
    const key =
      record.providerKey === null
        ? ''
        : needsFreshKey(correction.card, receipts)
          ? ' under a provider key of its own (the provider may have stored the rejection under the first)'
          : ' under the same provider key';
    actions.push({
      action: 'resend-with',
      safe: true,
      why: `every attempt was rejected or not applied: corrected params under the same intent are sent as a new revision${key} (--resend-with <params.json>, or the caller calls again with them)`,
    });
  }
  return [...actions, ...closeActions(created)];
}

function closeActions(created: string | undefined): SafeAction[] {
  const done =
    created === undefined
      ? 'once you have confirmed at the provider that the effect exists; record its reference'
      : `once ${created} is finished at the provider (or another reference you confirmed there); record it`;
  return [
    { action: 'mark-done', safe: true, why: done },
    { action: 'abandon', safe: true, why: 'retrysafe stops; nothing at the provider is undone' },
  ];
}

/** A handoff packet (docs/concepts.md, "Handoff and receipts"): from receipts only, so no params, secrets or PII. */
export function buildPacket(input: PacketInput): HandoffPacket {
  const { record, receipts } = input;
  const last = receipts.at(-1);
  // A reference no ledger can store (the attempts keep it) would have the hand-off refused, the operation left open.
  const storable = (r: Receipt) => r.providerRef !== undefined && !unstorable(r.providerRef);
  const lastRef = receipts.findLast(storable)?.providerRef ?? record.providerRef ?? undefined;
  const created = receipts.findLast((r) => r.created !== undefined)?.created;
  return {
    businessOperationId: record.businessOperationId,
    provider: record.provider,
    operation: record.operation,
    intentFingerprint: record.intentFingerprint,
    providerKey: record.providerKey,
    reason: input.reason,
    explanation: input.explanation,
    attempts: receipts.map(({ startedAt: at, ...r }): HandoffAttempt => {
      const { attemptId, runId, kind, outcome, status, code, providerRef, requestId, message, created } = r;
      return defined({ attemptId, runId, kind, at, outcome, status, code, providerRef, requestId, message, created });
    }),
    lastKnown: defined({
      outcome: last?.outcome ?? record.lastOutcome,
      status: last?.status,
      code: last?.code,
      providerRef: lastRef,
      message: last?.message,
      fields: last?.fields,
      created,
    }),
    safeNextActions: nextActions(input, created),
    createdAt: new Date(input.now).toISOString(),
  };
}

/** E.g. open a ticket, page someone. */
export function callbackHandoffSink(callback: (packet: HandoffPacket) => void | Promise<void>): HandoffSink {
  return { send: (packet) => callback(packet) };
}

/** Directories are created. */
export function jsonlHandoffSink(path: string): HandoffSink {
  if (!path) throw new RunnerConfigurationError('handoff', 'jsonlHandoffSink needs a file path');
  return {
    async send(packet) {
      await mkdir(dirname(path), { recursive: true });
      await appendFile(path, JSON.stringify(packet) + '\n', 'utf8').catch((e) => {
        throw namingPath(e, path);
      });
    },
  };
}

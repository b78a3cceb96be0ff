/**
 * The text a receipt's hash is taken over, `prevHash + canonicalJson(body)`, written for the receipt's
 * own shape (issue 23): its members in their sorted order from a fixed list, each value by the
 * contract's own string and number rules (`@retrysafe/contract/internal`, their one owner), after the
 * prefix (no second rope of prefix and text). No key list to collect, sort or look up, no recursion:
 * ~3.7k instructions less than canonicalJson per receipt (callgrind). Anything this writer does not know
 * — a member not in the list, a value of another type, a non-finite number, a `decision` with other
 * members, field errors, an object that is not plain — goes to canonicalJson whole, so the answer is
 * always canonicalJson's (receipts read back from a ledger, even edited ones, included).
 */
import { canonicalJson } from '@retrysafe/contract';
import { numberText, prototypePolluted, stringText } from '@retrysafe/contract/internal';

/** The members this writer writes, in code-unit order (as canonicalJson sorts keys); `fields` is not among them. */
export const RECEIPT_KEYS = [
  'attemptId',
  'businessOperationId',
  'code',
  'decision',
  'finishedAt',
  'kind',
  'message',
  'operation',
  'outcome',
  'prevHash',
  'provider',
  'providerKey',
  'providerRef',
  'rejectReason',
  'requestFingerprint',
  'requestId',
  'runId',
  'seq',
  'startedAt',
  'status',
] as const;
/** The decision's members, in code-unit order. */
export const DECISION_KEYS = ['action', 'delayMs', 'reason'] as const;

// What precedes a member: `{"key":` when it is the first one written, `,"key":` after another (the
// keys are plain ASCII, so their JSON text is the key in quotes).
const FIRST = RECEIPT_KEYS.map((k) => '{"' + k + '":');
const NEXT = RECEIPT_KEYS.map((k) => ',"' + k + '":');
const D_FIRST = DECISION_KEYS.map((k) => '{"' + k + '":');
const D_NEXT = DECISION_KEYS.map((k) => ',"' + k + '":');
const DECISION = RECEIPT_KEYS.indexOf('decision');
const N = RECEIPT_KEYS.length;

/** The index of a receipt member in RECEIPT_KEYS, -1 for any other key. */
function slot(k: string): number {
  switch (k) {
    case 'attemptId': return 0;
    case 'businessOperationId': return 1;
    case 'code': return 2;
    case 'decision': return 3;
    case 'finishedAt': return 4;
    case 'kind': return 5;
    case 'message': return 6;
    case 'operation': return 7;
    case 'outcome': return 8;
    case 'prevHash': return 9;
    case 'provider': return 10;
    case 'providerKey': return 11;
    case 'providerRef': return 12;
    case 'rejectReason': return 13;
    case 'requestFingerprint': return 14;
    case 'requestId': return 15;
    case 'runId': return 16;
    case 'seq': return 17;
    case 'startedAt': return 18;
    case 'status': return 19;
    default: return -1;
  }
}

/** A scalar member's canonical text: a string, a finite number or null; `undefined` for anything else. */
function scalarText(v: unknown): string | undefined {
  if (typeof v === 'string') return stringText(v);
  if (typeof v === 'number') return numberText(v);
  return v === null ? 'null' : undefined;
}

/** A plain object (as canonicalJson's fast pass accepts it, null prototype aside, which goes the full way). */
const plain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;

/** The decision's canonical text, or undefined when it is not the decision's shape (canonicalJson then writes the receipt). */
function decisionText(d: unknown): string | undefined {
  if (!plain(d)) return undefined;
  let action: unknown;
  let delayMs: unknown;
  let reason: unknown;
  for (const k in d) {
    const v = d[k];
    if (v === undefined) continue;
    switch (k) {
      case 'action': action = v; break;
      case 'delayMs': delayMs = v; break;
      case 'reason': reason = v; break;
      default: return undefined;
    }
  }
  let out = '';
  if (action !== undefined) {
    const t = scalarText(action);
    if (t === undefined) return undefined;
    out = D_FIRST[0] + t;
  }
  if (delayMs !== undefined) {
    const t = scalarText(delayMs);
    if (t === undefined) return undefined;
    out += (out === '' ? D_FIRST[1] : D_NEXT[1]) + t;
  }
  if (reason !== undefined) {
    const t = scalarText(reason);
    if (t === undefined) return undefined;
    out += (out === '' ? D_FIRST[2] : D_NEXT[2]) + t;
  }
  return out === '' ? '{}' : out + '}';
}

/**
 * `prefix + canonicalJson(body)`. `body` is what receiptHash hashes (a receipt without its hash); any
 * shape is accepted, and for any it is byte for byte canonicalJson's answer (or its error).
 */
export function receiptText(prefix: string, body: unknown): string {
  // for-in below must see own keys only (as canonicalJson's fast pass); a receipt is a plain object.
  if (!plain(body) || prototypePolluted()) return prefix + canonicalJson(body);
  const values: unknown[] = [undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined];
  for (const k in body) {
    const v = body[k];
    if (v === undefined) continue;
    const i = slot(k);
    if (i < 0) return prefix + canonicalJson(body);
    values[i] = v;
  }
  let out = prefix;
  let first = true;
  for (let i = 0; i < N; i++) {
    const v = values[i];
    if (v === undefined) continue;
    const t = i === DECISION ? decisionText(v) : scalarText(v);
    if (t === undefined) return prefix + canonicalJson(body);
    out += (first ? FIRST[i]! : NEXT[i]!) + t;
    first = false;
  }
  return out + (first ? '{}' : '}');
}

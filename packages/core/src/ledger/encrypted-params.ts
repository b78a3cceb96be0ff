import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { type ClaimResult, type Ledger, LedgerError, type OperationRecord } from '@retrysafe/contract';
import { PRUNABLE_STATES, storedJson } from '@retrysafe/contract/ledger';
import { RunnerConfigurationError } from '../errors/runner-configuration-error.js';
import { checkReceiptKey, type ReceiptKey } from '../receipts.js';

/** Params at rest as AES-256-GCM ciphertext under this key: its id names it in each envelope (old rows stay readable
 * after a rotation); its secret (16+ bytes, random 32 best) is expanded with HKDF-SHA256. */
export type ParamsKey = ReceiptKey;

export interface EncryptParamsOptions {
  readonly key: ParamsKey;
  /** Older keys, to read rows written before a rotation. */
  readonly previous?: readonly ParamsKey[];
}

type Envelope = { readonly $retrysafeEncrypted: 'aes-256-gcm/v1' } & Readonly<
  Record<'kid' | 'iv' | 'tag' | 'data', string>
>;

const isEnvelope = (v: unknown): v is Envelope =>
  typeof v === 'object' && v !== null && (v as Envelope).$retrysafeEncrypted === 'aes-256-gcm/v1';

const SEALED = Symbol.for('retrysafe.paramsSealed');

/** Refuses a record whose params are still sealed (no key, or not this one): re-sending it would send the ciphertext. */
export function checkParamsOpen(record: OperationRecord): void {
  if (isEnvelope(record.params)) {
    const message = `params of ${record.businessOperationId} are encrypted with key '${record.params.kid}', which this process cannot open (encryptParams with that key, RETRYSAFE_PARAMS_KEYS); nothing sent`;
    throw Object.assign(new LedgerError(message), { [SEALED]: true });
  }
}

/** Whether `err` is checkParamsOpen's refusal: one record this process cannot drive, not a ledger that failed. */
export const isParamsSealed = (err: unknown): boolean =>
  LedgerError.isInstance(err) && (err as unknown as Record<symbol, unknown>)[SEALED] === true;

function derive(key: ParamsKey): Buffer {
  checkReceiptKey(key, (why) => new RunnerConfigurationError('encryptParams.key', why), 'params key');
  const secret = typeof key.secret === 'string' ? Buffer.from(key.secret, 'utf8') : Buffer.from(key.secret);
  return Buffer.from(hkdfSync('sha256', secret, Buffer.from('retrysafe'), Buffer.from(`params-at-rest:${key.id}`), 32));
}

/** A ledger that stores params encrypted and hands them back decrypted: `encryptParams(createSqliteLedger(…), { key })`. */
export function encryptParams(inner: Ledger, options: EncryptParamsOptions): Ledger {
  const bytes = derive(options.key); // first: a missing key is refused as a bad one is
  const current = { id: options.key.id, bytes };
  const ring = new Map<string, Buffer>([[current.id, current.bytes]]);
  for (const k of options.previous ?? []) ring.set(k.id, derive(k));

  const seal = (params: unknown, id: string): Envelope => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', current.bytes, iv);
    // The operation id is authenticated too: an envelope moved to another row does not decrypt.
    cipher.setAAD(Buffer.from(String(id), 'utf8')); // an id that is no string is the inner claim's to refuse
    const data = Buffer.concat([cipher.update(storedJson(params ?? null, 'encrypted params'), 'utf8'), cipher.final()]);
    return {
      $retrysafeEncrypted: 'aes-256-gcm/v1',
      kid: current.id,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
  };
  const open = (record: OperationRecord): OperationRecord => {
    if (!isEnvelope(record.params)) return record; // written before encryption was turned on
    const env = record.params;
    const key = ring.get(env.kid);
    // A closed operation is never re-sent: its params may stay sealed under a key dropped after a rotation.
    if (!key && PRUNABLE_STATES.includes(record.state)) return record;
    if (!key)
      throw new LedgerError(
        `params of ${record.businessOperationId} are encrypted with key '${env.kid}', which this process does not hold (add it to previous keys)`,
      );
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(env.iv, 'base64'));
      decipher.setAAD(Buffer.from(record.businessOperationId, 'utf8'));
      decipher.setAuthTag(Buffer.from(env.tag, 'base64'));
      const text = Buffer.concat([decipher.update(Buffer.from(env.data, 'base64')), decipher.final()]).toString('utf8');
      return { ...record, params: JSON.parse(text) as unknown };
    } catch {
      throw new LedgerError(
        `params of ${record.businessOperationId} do not decrypt with key '${env.kid}' (wrong key, or the row was edited)`,
      );
    }
  };
  const openClaim = (r: ClaimResult): ClaimResult =>
    r.kind === 'gone' ? r : ({ ...r, record: open(r.record) } as ClaimResult);
  const openIfAble = (record: OperationRecord): OperationRecord => {
    try {
      return open(record);
    } catch {
      return record;
    }
  };

  return {
    ...(inner.capabilities ? { capabilities: inner.capabilities } : {}),
    claim: async (input) =>
      openClaim(await inner.claim({ ...input, params: seal(input.params, input.businessOperationId) })),
    renewLease: (ref, leaseMs, now) => inner.renewLease(ref, leaseMs, now),
    markDispatched: async (ref, now) => open(await inner.markDispatched(ref, now)),
    setState: async (ref, patch) => open(await inner.setState(ref, patch)),
    handOff: async (ref, packet, now, receipt) => open(await inner.handOff(ref, packet, now, receipt)),
    appendReceipt: (ref, receipt) => inner.appendReceipt(ref, receipt),
    release: (ref) => inner.release(ref),
    resolve: async (id, resolution, now, receipt) => open(await inner.resolve(id, resolution, now, receipt)),
    get: async (id) => {
      const r = await inner.get(id);
      return r ? open(r) : null;
    },
    // A listing is not failed whole by one row this process cannot open: that row stays sealed (refused if driven).
    list: async (filter) => (await inner.list(filter)).map(openIfAble),
    receipts: (id) => inner.receipts(id),
    recoverCandidates: async (now, limit, onUnreadable) =>
      (await inner.recoverCandidates(now, limit, onUnreadable)).map(openIfAble),
    // onPrune gets the records as stored: a closed operation's params may be under a key rotated away.
    ...(inner.prune ? { prune: (options) => inner.prune!(options) } : {}),
    close: () => inner.close(),
  };
}

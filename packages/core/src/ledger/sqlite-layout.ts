import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { BODY_BINARY_2, BODY_BINARY_3, decodeBinaryBody } from './sqlite-body2.js';

/**
 * How the SQLite ledger stores one operation (file layout 3): one row per operation, its searchable
 * fields in columns and everything else in `body`, a compressed document holding the record's JSON
 * and its receipts' JSON, one per line, exactly as `JSON.stringify` wrote them (so a receipt reads
 * back with the same bytes, and its hash chain means what it meant).
 *
 * `body` is one format byte, then the lines deflated (raw deflate) against a fixed dictionary of
 * the text every record and receipt repeats (field names, common values): a clean operation's
 * record and receipt, ~1.5 kB of JSON, take ~300 bytes. Format 0 (plain UTF-8 lines) is read too.
 * NEVER change a released dictionary: add a format byte with a new one.
 *
 * Since issue 23's second round the ledger writes format 2 (sqlite-body2.ts: a binary encoding of the
 * values, no zlib) for every row, and since its eighth format 3 (the same encoding, the record's head
 * before the receipts) for every new row; formats 0 and 1 are still read (files written by earlier releases,
 * rows a migration could not re-encode exactly) and written only by the layout-2 conversion's
 * fallback and by tests that edit files as an outside tool would.
 */
export const BODY_PLAIN = 0;
export const BODY_DEFLATE_1 = 1;

const DICTIONARY_1 = Buffer.from(
  [
    '"statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":null,"length":0}}',
    '"reason":"the provider performed it"},"providerKey":"',
    '"kind":"dispatch","startedAt":"20","finishedAt":"20","outcome":"succeeded","decision":{"action":"complete",',
    '"kind":"lookup","outcome":"unknown","outcome":"rejected","decision":{"action":"hand-off","action":"retry","action":"poll",',
    '"requestFingerprint":"sha256:","prevHash":null,"hash":"',
    '{"businessOperationId":"","seq":1,"runId":"run_","attemptId":"att_","provider":"","operation":"',
    '"state":"dispatched","state":"claimed","state":"handed-off","state":"rejected","state":"unknown",',
    '"fence":1,"leaseOwner":null,"leaseExpiresAt":null,"updatedAt":1,"createdAt":1,"firstDispatchedAt":1,"attemptCount":1,',
    '"lastOutcome":"succeeded","result":{"id":"},"providerRef":"',
    '{"businessOperationId":"","provider":"","operation":"","intentFingerprint":"sha256:","paramsFingerprint":"sha256:","params":{',
    '},"providerKey":"","state":"succeeded","fence":1,"leaseOwner":null,"leaseExpiresAt":null,"updatedAt":1',
    // A clean operation's record and receipt with every value that varies left out (no provider's names):
    // last, so the commonest shape is the nearest match.
    '{"businessOperationId":"","provider":"","operation":"","intentFingerprint":"sha256:","paramsFingerprint":"sha256:","params":{},"providerKey":"",',
    '"state":"succeeded","fence":1,"leaseOwner":null,"leaseExpiresAt":null,"updatedAt":17,"createdAt":17,"firstDispatchedAt":17,"attemptCount":1,',
    '"lastOutcome":"succeeded","result":{"id":""},"providerRef":"","statusRef":null,"handoff":null,"resolution":null,"receiptChain":{"head":"","length":1}}\n',
    '{"businessOperationId":"","seq":1,"runId":"run_","attemptId":"att_","provider":"","operation":"","kind":"dispatch","startedAt":"20",',
    '"finishedAt":"20","outcome":"succeeded","decision":{"action":"complete","reason":"the provider performed it"},"providerKey":"",',
    '"providerRef":"","requestFingerprint":"sha256:","prevHash":null,"hash":""}',
  ].join(''),
);
const DEFLATE_OPTIONS = { dictionary: DICTIONARY_1, windowBits: 12, memLevel: 5 } as const;
const INFLATE_OPTIONS = { dictionary: DICTIONARY_1, windowBits: 12 } as const;

/** The stored body of an operation: its record's JSON and its receipts' JSON, in seq order. */
export interface BodyLines {
  readonly record: string;
  readonly receipts: readonly string[];
}

/**
 * `compress: false` stores format 0 (plain lines): for an operation that is still open, whose row is
 * rewritten by its next step anyway (a clean operation's claim), so deflating it buys no file bytes and
 * costs a deflate on the write and an inflate on the next read.
 */
export function encodeBody(lines: BodyLines, compress = true): Uint8Array {
  const text = lines.receipts.length === 0 ? lines.record : `${lines.record}\n${lines.receipts.join('\n')}`;
  if (!compress) {
    const plain = Buffer.allocUnsafe(Buffer.byteLength(text, 'utf8') + 1);
    plain[0] = BODY_PLAIN;
    plain.write(text, 1, 'utf8');
    return plain;
  }
  const packed = deflateRawSync(text, DEFLATE_OPTIONS);
  const out = Buffer.allocUnsafe(packed.length + 1);
  out[0] = BODY_DEFLATE_1;
  packed.copy(out, 1);
  return out;
}

/** Throws (a plain Error) on a body it cannot read: a cut or corrupt row, or a format it does not know. */
export function decodeBody(body: Uint8Array | string): BodyLines {
  let text: string;
  if (typeof body === 'string') text = body;
  else if (body.length === 0) throw new Error('empty body');
  else if (body[0] === BODY_BINARY_2 || body[0] === BODY_BINARY_3) {
    // Formats 2 and 3 hold values: their JSON text is what JSON.stringify wrote for them (sqlite-body2.ts).
    const d = decodeBinaryBody(body);
    return { record: JSON.stringify(d.record), receipts: d.receipts.map((r) => JSON.stringify(r)) };
  }
  else if (body[0] === BODY_DEFLATE_1) text = inflateRawSync(body.subarray(1), INFLATE_OPTIONS).toString('utf8');
  else if (body[0] === BODY_PLAIN) text = Buffer.from(body.buffer, body.byteOffset + 1, body.length - 1).toString('utf8');
  else throw new Error(`body format ${body[0]} is not one this version reads (a newer retrysafe wrote it?)`);
  // JSON.stringify never writes a raw newline, so lines split exactly.
  const parts = text.split('\n');
  return { record: parts[0]!, receipts: parts.slice(1) };
}

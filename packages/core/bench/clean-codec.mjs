// On demand (not a test): `node packages/core/bench/clean-codec.mjs [N]` after building core.
// The SQLite ledger's body codec on a clean operation as the ledger runs it today (seventh round): the
// claim encodes the new `dispatched` record; the completion encodes the attempt's receipt and the
// `succeeded` record after it (no decode: the ledger knows the row it wrote; format 3 copies the claim's
// record head, FORMAT=2 measures format 2). Strings are flat, as the
// runner builds them. Under callgrind at two N, difference ÷ the difference of N:
//   for n in 3000 6000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/cc.$n node --single-threaded packages/core/bench/clean-codec.mjs $n; done
// BODY2_MODULE=<path of a built sqlite-body2.js> measures that build instead of this package's dist.
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const { encodeBody2, encodeBody3 } = await import(process.env.BODY2_MODULE ? pathToFileURL(process.env.BODY2_MODULE).href : '../dist/ledger/sqlite-body2.js');

const N = Number(process.argv[2] ?? 20000);
/** A flat (sequential) copy of s: template literals and slices give ropes and slices. */
const flat = (s) => Buffer.from(s, 'latin1').toString('latin1');
// Digests as the runner's are (random-looking, so the codec's string buckets spread as in a real run),
// distinct per value and operation.
const hex = (i, n) => createHash('sha256').update(String(i)).digest('hex').slice(0, n);
const uuid = (i) => { const h = hex(i * 7 + 3, 32); return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`; };

function inputs(i) {
  const id = flat(`noop.orders.create:${hex(i, 32)}`);
  const t = 1796137962765 + i * 3;
  const params = { orderRef: flat(`w0-${i}`), amount: 1 };
  const paramsFingerprint = flat(`sha256:${hex(3 * i + 1, 64)}`);
  const dispatched = {
    businessOperationId: id, provider: 'noop', operation: 'noop.orders.create',
    intentFingerprint: flat(`sha256:${hex(3 * i, 64)}`), paramsFingerprint,
    params, providerKey: id, state: 'dispatched', fence: 1,
    leaseOwner: 'bench:1234:0', leaseExpiresAt: t + 30000, updatedAt: t, createdAt: t, firstDispatchedAt: t,
    attemptCount: 1, lastOutcome: null, result: null, providerRef: null, statusRef: null, handoff: null,
    resolution: null, receiptChain: { head: null, length: 0 },
  };
  const ref = flat(`ord_w0-${i}`);
  const hash = flat(hex(3 * i + 2, 64));
  const receipt = {
    businessOperationId: id, seq: 1, runId: flat(`run_${uuid(i)}`), attemptId: flat(`att_${uuid(i + 1)}`), provider: 'noop',
    operation: 'noop.orders.create', kind: 'dispatch', startedAt: new Date(t + 1).toISOString(),
    finishedAt: new Date(t + 2).toISOString(), outcome: 'succeeded',
    decision: { action: 'complete', reason: 'the provider performed it' }, providerKey: id,
    requestFingerprint: paramsFingerprint, prevHash: null, providerRef: ref, hash,
  };
  const done = {
    ...dispatched, state: 'succeeded', lastOutcome: 'succeeded', result: { id: ref }, providerRef: ref,
    leaseOwner: null, leaseExpiresAt: null, updatedAt: t + 2, receiptChain: { head: hash, length: 1 },
  };
  return { dispatched, receipt, done };
}
const POOL = 200 + Math.max(N, 6000);
const all = Array.from({ length: POOL }, (_, i) => inputs(i));
const NONE = { bytes: new Uint8Array(0), count: 0, strings: [], lastTime: 0, lastBig: 0, head: null };
// FORMAT=2: format 2 (the ledger before body format 3); else format 3, the completion copying the claim's head.
const FORMAT = process.env.FORMAT === '2' ? 2 : 3;

let bytes = 0;
function op(i) {
  const { dispatched, receipt, done } = all[i];
  if (FORMAT === 2) {
    bytes += encodeBody2(dispatched, [], NONE).length;
    bytes += encodeBody2(done, [receipt], NONE).length;
    return;
  }
  // As the ledger calls it: the claim's stored part kept, the completion's (a terminal record) not.
  const claim = encodeBody3(dispatched, [], null, null, dispatched, true);
  bytes += claim.body.length;
  bytes += encodeBody3(done, [receipt], claim.stored, null, done, false).body.length;
}

for (let i = 0; i < 200; i++) op(i);
const start = performance.now();
for (let i = 0; i < N; i++) op(200 + i);
const us = ((performance.now() - start) * 1000) / N;
console.log(`${N} operations: ${us.toFixed(2)} µs/op (2 encodes), ${(bytes / (N + 200)).toFixed(0)} bytes/op`);

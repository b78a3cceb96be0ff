// On demand (not a test): `node packages/core/bench/body2-codec.mjs [N]` after building core.
// The SQLite ledger's body format 2 codec alone, on the bodies of a clean run (the ledger's calls per
// operation: claim writes the claimed record; markDispatched reads it and writes the dispatched one;
// setState reads that and writes the succeeded record with its receipt; a get reads it), for 200 warm-up
// operations and then N. Made to run under callgrind at two N and divide the difference (issue 23):
//   for n in 3000 6000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/b2.$n node --single-threaded packages/core/bench/body2-codec.mjs $n; done
// Without valgrind it prints the time per operation (noisy; read ratios between builds in one sitting).
// BODY2_MODULE=<path of a built sqlite-body2.js> measures that build instead of this package's dist.
import { pathToFileURL } from 'node:url';

const { decodeBody2, encodeBody2 } = await import(process.env.BODY2_MODULE ? pathToFileURL(process.env.BODY2_MODULE).href : '../dist/ledger/sqlite-body2.js');

const N = Number(process.argv[2] ?? 20000);
const hex = (i, n) => (i.toString(16).padStart(8, '0') + 'c0ffee5eed').repeat(8).slice(0, n);
const uuid = (i) => { const h = hex(i * 7 + 3, 32); return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`; };

/** The values of operation i: made before the measured loop (at the same count whatever N), so what
 * N changes is the codec's work (and the record copies the ledger's transitions make). */
function inputs(i) {
  const id = `noop.orders.create:${hex(i, 32)}`;
  const runId = `run_${uuid(i)}`;
  const t = 1796137962765 + i * 3;
  const claimed = {
    businessOperationId: id, provider: 'noop', operation: 'noop.orders.create',
    intentFingerprint: `sha256:${hex(i, 64)}`, paramsFingerprint: `sha256:${hex(i + 1, 64)}`,
    params: { orderRef: `w0-${i}`, amount: 1 }, providerKey: id, state: 'claimed', fence: 1,
    leaseOwner: runId, leaseExpiresAt: t + 30000, updatedAt: t, createdAt: t, firstDispatchedAt: null,
    attemptCount: 0, lastOutcome: null, result: null, providerRef: null, statusRef: null, handoff: null,
    resolution: null, receiptChain: { head: null, length: 0 },
  };
  const receipt = {
    businessOperationId: id, seq: 1, runId, attemptId: `att_${uuid(i + 1)}`, provider: 'noop',
    operation: 'noop.orders.create', kind: 'dispatch', startedAt: new Date(t + 1).toISOString(),
    finishedAt: new Date(t + 2).toISOString(), outcome: 'succeeded',
    decision: { action: 'complete', reason: 'the provider performed it' }, providerKey: id,
    requestFingerprint: `sha256:${hex(i + 1, 64)}`, prevHash: null, providerRef: `ord_w0-${i}`, hash: hex(i + 2, 64),
  };
  return { t, claimed, receipt, ref: `ord_w0-${i}` };
}
const POOL = 200 + Math.max(N, 6000);
const all = Array.from({ length: POOL }, (_, i) => inputs(i));

function op(i) {
  const { t, claimed, receipt, ref } = all[i];
  let d = decodeBody2(encodeBody2(claimed, []));
  const dispatched = { ...d.record, state: 'dispatched', firstDispatchedAt: t + 1, attemptCount: 1, updatedAt: t + 1 };
  d = decodeBody2(encodeBody2(dispatched, [], d.stored));
  const done = {
    ...d.record, state: 'succeeded', leaseOwner: null, leaseExpiresAt: null, updatedAt: t + 2, lastOutcome: 'succeeded',
    result: { id: ref }, providerRef: ref, receiptChain: { head: receipt.hash, length: 1 },
  };
  d = decodeBody2(encodeBody2(done, [receipt], d.stored));
  return d.receipts.length;
}

for (let i = 0; i < 200; i++) op(i);
const start = performance.now();
let sum = 0;
for (let i = 0; i < N; i++) sum += op(200 + i);
const us = ((performance.now() - start) * 1000) / N;
if (sum !== N) throw new Error('a receipt went missing');
console.log(`${N} operations: ${us.toFixed(2)} µs/op (3 encodes, 3 decodes)`);

// What the body codec's format tests share: the fuzzing of a decoder behind the checksum.
import fc from 'fast-check';
import { BodyFormatError, resealBody2 } from '../src/ledger/sqlite-body2.js';

/**
 * The decoder behind a body's checksum, fuzzed: every cut of `body`, every flipped bit of it, and random
 * bytes after `formatByte`, each resealed with a valid checksum, end in BodyFormatError or a value: never
 * a hang or another error.
 */
export function fuzzBodyDecoder(body: Uint8Array, decode: (b: Uint8Array) => unknown, formatByte: number): void {
  const tryDecode = (b: Uint8Array) => {
    try {
      decode(resealBody2(b));
    } catch (err) {
      if (!(err instanceof BodyFormatError)) throw err;
    }
  };
  for (let n = 5; n < body.length; n++) tryDecode(Buffer.concat([body.subarray(0, n), Buffer.alloc(4)]));
  for (let i = 1; i < body.length - 4; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const flipped = Buffer.from(body);
      flipped[i]! ^= 1 << bit;
      tryDecode(flipped);
    }
  }
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => tryDecode(Buffer.concat([Buffer.from([formatByte]), bytes, Buffer.alloc(4)]))),
    { numRuns: 5000 },
  );
}

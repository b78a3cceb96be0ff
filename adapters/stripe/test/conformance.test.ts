import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { stripeDrill } from '../src/sandbox/index.js';

// The shared drill on every operation: real stripe SDK → fault proxy → loopback Stripe sandbox, on the
// runner's virtual clock (src/sandbox/stripe-drills.ts; the CLI's `retrysafe drill` runs the same setup).
// Receipts: one JSON per scenario × operation plus summary.json.
const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-stripe-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...stripeDrill, outDir });

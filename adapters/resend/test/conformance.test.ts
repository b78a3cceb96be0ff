import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { resendDrill } from '../src/sandbox/index.js';

// The shared drill on every operation: real resend SDK → fault proxy → loopback Resend sandbox, on the
// runner's virtual clock (src/sandbox/resend-drills.ts; the CLI's `retrysafe drill` runs the same setup).
// Receipts: one JSON per scenario × operation plus summary.json.
const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-resend-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...resendDrill, outDir });

// The shared duplicate-execution drill (@retrysafe/testkit) on every msgraph operation: the real
// Graph SDK → the testkit fault proxy → the loopback Graph sandbox, on the runner's virtual clock.
// The setup lives in src/sandbox/msgraph-drills.ts; the CLI's `retrysafe drill` runs the same one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { msGraphDrill } from '../src/sandbox/index.js';

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-msgraph-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...msGraphDrill, outDir });

// The shared duplicate-execution drill (@retrysafe/testkit) on every github operation: the real
// @octokit/rest → the testkit fault proxy → the loopback GitHub sandbox, on the runner's virtual clock.
// The setup lives in src/sandbox/github-drills.ts; the CLI's `retrysafe drill` runs the same one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { gitHubDrill } from '../src/sandbox/index.js';

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-github-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...gitHubDrill, outDir });

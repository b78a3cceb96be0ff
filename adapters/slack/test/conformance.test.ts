// The shared duplicate-execution drill (@retrysafe/testkit) on every Slack operation: the real
// @slack/web-api WebClient → the testkit fault proxy → the loopback Slack sandbox, on the runner's
// virtual clock. The setup lives in src/sandbox/slack-drills.ts; the CLI's `retrysafe drill` runs the same one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runConformance } from '@retrysafe/testkit/conformance';
import { afterAll } from 'vitest';
import { slackDrill } from '../src/sandbox/index.js';

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-slack-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
runConformance({ ...slackDrill, outDir });

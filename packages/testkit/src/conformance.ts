import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createDrillContext, disposeDrillContext, runScenario, SCENARIO_TITLES, writeSummary, type DrillContext } from './drill.js';
import { SCENARIOS, type ConformanceOptions } from './drill-types.js';

export { runDrill, runScenario, createDrillContext, writeSummary, disposeDrillContext, SCENARIO_TITLES, DEFAULT_DRILL_TIMEOUT_MS } from './drill.js';
export type { DrillContext } from './drill.js';
export { criteriaFor, readCard, skipReason } from './criteria.js';
export type { CardAbilities } from './criteria.js';
export * from './drill-types.js';

/**
 * Registers the conformance drill as vitest tests: one `describe` per operation, one `it` per
 * scenario. A scenario the card says cannot apply still registers a test, which asserts that the skip
 * was recorded with the card field that caused it. Receipts: one JSON file per scenario × operation
 * plus `summary.json` in `options.outDir` (default: a temp dir, printed in the summary test).
 */
export function runConformance(options: ConformanceOptions): void {
  let ctx: DrillContext | undefined;
  const context = () => (ctx ??= createDrillContext(options));

  describe(`${options.name} conformance`, () => {
    afterAll(() => {
      if (!ctx) return;
      writeSummary(ctx);
      disposeDrillContext(ctx);
    });

    for (const operation of Object.keys(options.operations ?? {})) {
      describe(operation, () => {
        for (const scenario of SCENARIOS) {
          it(`${scenario}: ${SCENARIO_TITLES[scenario]}`, async () => {
            const result = await runScenario(context(), operation, scenario);
            // the receipt is written before anything is asserted, pass or fail
            expect(existsSync(result.receiptFile)).toBe(true);
            const onDisk = JSON.parse(readFileSync(result.receiptFile, 'utf8')) as { status: string };
            expect(onDisk.status).toBe(result.status);
            if (result.status === 'skipped') {
              expect(result.skip?.cardField, `${scenario} skipped without naming the card field`).toMatch(/^[a-zA-Z.]+$/);
              expect(result.skip?.reason).toBeTruthy();
              return;
            }
            expect(result.failures, result.failures.join('\n')).toEqual([]);
            expect(result.status).toBe('passed');
          });
        }
      });
    }
  });
}

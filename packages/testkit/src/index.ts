export { startFaultProxy, validateFault } from './fault-proxy.js';
export type { Fault, FaultScript, FaultRequestInfo, FaultProxy, FaultProxyOptions, ProxyRequest } from './fault-proxy.js';
export { runCrashDrill, CRASH_POINTS } from './crash-drill.js';
export type { CrashDrillOptions, CrashDrillReport, CrashDrillSandbox, CrashRunResult, CrashPoint } from './crash-drill.js';
export { createDrillClock, seededRandom } from './drill-clock.js';
export type { DrillClock } from './drill-clock.js';
// The drill without vitest (for the CLI's `retrysafe drill` and scripts); `./conformance` adds runConformance.
export { runDrill, runScenario, writeSummary, disposeDrillContext, SCENARIO_TITLES } from './drill.js';
export { createDrillContext, DEFAULT_DRILL_TIMEOUT_MS } from './drill-harness.js';
export type { DrillContext } from './drill-harness.js';
export { criteriaFor, oracleAbsenceProvenAfterMs, oracleResendSafe, readCard, skipReason } from './criteria.js';
export type { CardAbilities } from './criteria.js';
export { SCENARIOS } from './drill-types.js';
export type {
  ConformanceOptions,
  CountCriterion,
  DrillOperation,
  DrillOptions,
  DrillOutcome,
  DrillPolicy,
  DrillReport,
  DrillSandbox,
  DrillSummary,
  ObservedValues,
  OperationFaults,
  PassCriteria,
  ScenarioId,
  ScenarioResult,
  ScenarioSkip,
} from './drill-types.js';

export { startFaultProxy, validateFault } from './fault-proxy.js';
export type { Fault, FaultScript, FaultRequestInfo, FaultProxy, FaultProxyOptions, ProxyRequest } from './fault-proxy.js';
export { runCrashDrill, CRASH_POINTS } from './crash-drill.js';
export type { CrashDrillOptions, CrashDrillReport, CrashDrillSandbox, CrashRunResult, CrashPoint } from './crash-drill.js';
export { createDrillClock, seededRandom } from './drill-clock.js';
export type { DrillClock } from './drill-clock.js';

export { startFaultProxy, validateFault } from './fault-proxy.js';
export type { Fault, FaultScript, FaultRequestInfo, FaultProxy, FaultProxyOptions, ProxyRequest } from './fault-proxy.js';

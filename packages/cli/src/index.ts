export { main, EXIT, type Io } from './cli.js';
export { drillCommand, drillTable, type DrillCommandReport, type DrillRow } from './commands/drill.js';
export { cardsCommand, type CardsCommandResult } from './commands/cards.js';
export { demoCommand, type DemoReport } from './commands/demo.js';
export { ledgerLs, ledgerShow, ledgerHandoffs, ledgerResolve } from './commands/ledger.js';
export { renderHtmlReport } from './report/html.js';
export { loadAdapters, type AdapterEntry } from './registry.js';

export {
  startGitHubSandbox,
  type FaultScript,
  type GitHubSandbox,
  type GitHubSandboxOptions,
  type SandboxComment,
  type SandboxFault,
  type SandboxIssue,
  type SandboxKind,
  type SandboxRequest,
} from './github-sandbox.js';
export { gitHubDrill, drills, gitHubDrillFaults, DRILL_TOKEN, DRILL_OWNER, DRILL_REPO, drillIssueParams, drillCommentParams, type GitHubDrill } from './github-drills.js';

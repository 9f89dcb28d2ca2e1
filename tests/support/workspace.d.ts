/** A new governed sample workspace (see workspace.js); removed when the test file ends. */
export function sampleWorkspace(root: string, options?: { prefix?: string; hooksYaml?: string; appendHooks?: string }): string;

// The status-bar item: the engine's state at a glance, and a click away from its details.
import * as vscode from 'vscode';
import type { EngineState } from '../../../protocol/messages';
import { describe } from '../engine/engineHost';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('chokepoint.engine', vscode.StatusBarAlignment.Left, 100);
  private readonly watch = vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('chokepoint.statusBar.enabled')) this.applyVisibility();
  });

  constructor() {
    this.item.name = 'Chokepoint';
    this.item.command = 'chokepoint.showEngineInfo';
  }

  update(state: EngineState): void {
    const item = this.item;
    item.tooltip = describe(state);
    item.backgroundColor = undefined;
    if (state.status === 'failed') {
      item.text = '$(error) Chokepoint: engine failed';
      item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    } else if (state.status === 'noWorkspace') {
      item.text = '$(shield) Chokepoint: no workspace';
    } else if (state.diagnostics.length > 0) {
      item.text = `$(warning) Chokepoint ${state.version}: config error`;
      item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    } else {
      item.text = `$(shield) Chokepoint ${state.version}`;
    }
    this.applyVisibility();
  }

  /** The text shown now, for tests and the engine info command. */
  get text(): string {
    return this.item.text;
  }

  private applyVisibility(): void {
    if (vscode.workspace.getConfiguration('chokepoint').get<boolean>('statusBar.enabled', true)) this.item.show();
    else this.item.hide();
  }

  dispose(): void {
    this.watch.dispose();
    this.item.dispose();
  }
}

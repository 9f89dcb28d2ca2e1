// The status-bar item: the engine's state at a glance, and a click away from its details.
import * as vscode from 'vscode';
import type { EngineState } from '../../../protocol/messages';
import { describe } from '../engine/engineHost';
import { statusLine } from './statusLine';

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
    const line = statusLine(state);
    item.text = line.text;
    item.tooltip = line.warning ? `${describe(state)}\n\n${line.warning}` : describe(state);
    item.backgroundColor = line.tone ? new vscode.ThemeColor(`statusBarItem.${line.tone}Background`) : undefined;
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

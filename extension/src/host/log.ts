// The "Chokepoint" output channel, with the level the user picked in `chokepoint.logLevel`.
import * as vscode from 'vscode';

const LEVELS = ['error', 'warn', 'info', 'debug'] as const;
type Level = (typeof LEVELS)[number];

export class Log implements vscode.Disposable {
  readonly channel = vscode.window.createOutputChannel('Chokepoint');
  private level: Level = 'info';
  private readonly watch = vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('chokepoint.logLevel')) this.readLevel();
  });

  constructor() {
    this.readLevel();
  }

  private readLevel(): void {
    const v = vscode.workspace.getConfiguration('chokepoint').get<string>('logLevel', 'info');
    this.level = (LEVELS as readonly string[]).includes(v) ? (v as Level) : 'info';
  }

  private write(level: Level, message: string): void {
    if (LEVELS.indexOf(level) > LEVELS.indexOf(this.level)) return;
    this.channel.appendLine(`${new Date().toISOString()} [${level}] ${message}`);
  }

  error(m: string): void {
    this.write('error', m);
  }
  warn(m: string): void {
    this.write('warn', m);
  }
  info(m: string): void {
    this.write('info', m);
  }
  debug(m: string): void {
    this.write('debug', m);
  }

  dispose(): void {
    this.watch.dispose();
    this.channel.dispose();
  }
}

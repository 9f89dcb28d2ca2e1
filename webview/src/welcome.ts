// Welcome content: what an empty section of the sidebar says to do next, with a button for it. A
// button either sends one of the page's own messages or asks the host to run a command of the
// protocol's allow-list (`WelcomeCommand`); the page can name no other command.
import type { WebviewMessage, WelcomeCommand } from '../../protocol/messages';
import { button, el } from './dom';

export interface WelcomeAction {
  label: string;
  /** A command of the allow-list, run by the host; or a message of the page's own. */
  run: WelcomeCommand | WebviewMessage;
  secondary?: boolean;
}

/** A block of text and buttons, hidden until `toggle(true)`; `testid` names it for the tests. */
export function welcome(testid: string, text: string[], actions: WelcomeAction[], post: (m: WebviewMessage) => void) {
  const buttons = actions.map((a) => {
    const b = button(a.label, () => post(typeof a.run === 'string' ? { type: 'runCommand', command: a.run } : a.run), a.secondary);
    b.setAttribute('data-testid', `${testid}-action`);
    return b;
  });
  const element = el('div', { class: 'welcome', testid }, ...text.map((t) => el('p', { text: t })), el('div', { class: 'actions' }, ...buttons));
  element.hidden = true;
  return {
    element,
    toggle(shown: boolean): void {
      element.hidden = !shown;
    },
  };
}

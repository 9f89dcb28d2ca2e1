// A section of the page that folds: its heading holds a native <button aria-expanded> (reached with
// Tab, toggled with Enter or Space, announced as expanded or collapsed) that shows or hides the
// section's body. Whatever follows the button in the heading (a count) stays in sight when folded.
import type { SectionKey } from './persisted';
import { el } from './dom';

export interface Collapsible {
  section: HTMLElement;
  /** The heading: the toggle, then room for a badge. */
  heading: HTMLElement;
  body: HTMLElement;
  isExpanded(): boolean;
  /** Opens or folds it without telling `onToggle` (the page's own doing, not the person's). */
  setExpanded(expanded: boolean): void;
  /** Told when the person opens or folds it. */
  onToggle: ((expanded: boolean) => void) | undefined;
}

export function collapsible(key: SectionKey, title: string, props: { class: string; testid: string }, ...children: Node[]): Collapsible {
  const toggle = el('button', { class: 'section-toggle', testid: `${key}-toggle` }, el('span', { class: 'chevron' }), el('span', { text: title }));
  toggle.type = 'button';
  toggle.setAttribute('aria-controls', `${key}-body`);
  toggle.querySelector('.chevron')!.setAttribute('aria-hidden', 'true');
  const heading = el('h3', { class: 'section-heading' }, toggle);
  heading.id = `${key}-heading`;
  const body = el('div', { class: 'section-body' }, ...children);
  body.id = `${key}-body`;
  const section = el('section', { class: props.class, testid: props.testid }, heading, body);
  section.setAttribute('aria-labelledby', heading.id);
  const c: Collapsible = {
    section,
    heading,
    body,
    isExpanded: () => toggle.getAttribute('aria-expanded') === 'true',
    setExpanded(expanded: boolean): void {
      toggle.setAttribute('aria-expanded', String(expanded));
      body.hidden = !expanded;
      section.dataset.expanded = String(expanded);
    },
    onToggle: undefined,
  };
  toggle.addEventListener('click', () => {
    const expanded = !c.isExpanded();
    c.setExpanded(expanded);
    c.onToggle?.(expanded);
  });
  c.setExpanded(true);
  return c;
}

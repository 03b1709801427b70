/**
 * xstate's functions, re-exported as they are: the machines and runners
 * import its values from here and its types from "xstate". To be removed
 * once they import "xstate" directly.
 */
export { assign, createActor, createMachine, fromPromise, setup, toPromise, transition } from "xstate";

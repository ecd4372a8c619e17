// `node --import .../register.js`: @opentelemetry/api cannot be found, as in
// an application that does not install it.
import { register } from "node:module";

register("./hooks.js", import.meta.url);

/* dcx transport: written by the transport work; placeholder so the module builds. */

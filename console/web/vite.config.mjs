// The console's bundle: React, built by Vite into dist/ (served by the API at /console, no CDN).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: process.env.WEFT_CONSOLE_OUT_DIR ?? 'dist',
    emptyOutDir: true,
    // No inline module preload polyfill: the Content-Security-Policy allows only scripts from this origin.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
  },
});

// esbuild bundles the console's stylesheets; the type-checker only needs to know the imports exist.
declare module '*.css';

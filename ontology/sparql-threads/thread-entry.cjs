// A query thread's entry: TypeScript through tsx, like the processes that start the threads.
require('tsx/cjs/api').register();
require('./query-thread.ts');
